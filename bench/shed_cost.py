"""What shedding one request costs a worker, whatever else the machine runs: ``python -m bench.shed_cost``.

One sync worker (``WEB_CONCURRENCY=1``, ``GUNICORN_THREADS=1``) is stopped
(SIGSTOP), ``--requests`` inspect requests (a connection each, as the overload
row sends them) wait in its backlog past ``AUTHSVC_QUEUE_TIMEOUT``, then it
is let go and sheds them all: the worker's CPU time over that, from
/proc/PID/stat (user + system, ticks of 10 ms), divided by the requests. Other
processes slow the worker down but do not add to its CPU time.

Twice: shed at accept (authsvc/web/shedding_worker.py, the default) and by
the WSGI check only (gunicorn's own sync worker, ``--worker-class sync``, as
before). The service on SQLite and the in-process store: a shed request
reads neither. bench/README.md, "Overload".

``--flood RATE``: instead, RATE inspect requests a second for 8 s (open loop, a
connection each) at one worker with a 1 s bound, shed each way: the statuses,
and the machine's ``TcpExtListenDrops`` meanwhile (SYNs dropped by a full backlog).
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from bench import openloop, seed
from devtools.processes import children
from devtools.services import Gunicorn, free_port

QUEUE_TIMEOUT = 0.2
INSPECT = "/api/engine/v2/api_keys/inspect"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def per_request(port: int, worker: int, count: int) -> tuple[float, int]:
    """CPU ms of ``worker`` per request of ``count`` shed together, and how many were answered 503."""
    request = (
        f"GET {INSPECT} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
        f"Authorization: Bearer {secrets.token_urlsafe(32)}\r\n\r\n"
    ).encode()
    os.kill(worker, signal.SIGSTOP)
    socks = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(request)
            socks.append(sock)
        time.sleep(3 * QUEUE_TIMEOUT)
        before = cpu_seconds(worker)
    finally:
        os.kill(worker, signal.SIGCONT)
    shed, first = 0, b""
    for sock in socks:
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        sock.close()
        shed += data.startswith(b"HTTP/1.1 503")
        first = first or data
    if shed != count:
        raise SystemExit(f"{count - shed} of {count} were not shed; one answer: {first[:300]!r}")
    return 1000 * (cpu_seconds(worker) - before) / count, shed


@contextmanager
def one_worker(worker_class: str | None, run_dir: Path, queue_timeout: float) -> Iterator[tuple[int, int]]:
    """The service with one sync worker, its app built: (port, the worker's pid)."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "1",
        "SECRET_KEY": secrets.token_urlsafe(32),
        "AUTHSVC_INSTANCE_DIR": str(run_dir),
        "AUTHSVC_QUEUE_TIMEOUT": str(queue_timeout),
    }
    seed.migrate(env)  # the outbox's senders read their table
    if worker_class:
        env["GUNICORN_CMD_ARGS"] = f"--worker-class {worker_class}"
    server = Gunicorn(f"shed-{worker_class or 'accept'}", port, env, run_dir / f"gunicorn-{port}.log")
    server.start(workers=1)
    try:
        assert server.process is not None
        [worker] = children(server.process.pid)
        # Its app built: what waited for the worker's start is served, not shed (authsvc/web/overload.py).
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=60)
        yield port, worker
    finally:
        server.stop()


def measure(worker_class: str | None, count: int, rounds: int, run_dir: Path) -> list[float]:
    with one_worker(worker_class, run_dir, QUEUE_TIMEOUT) as (port, worker):
        return [per_request(port, worker, count)[0] for _ in range(rounds)]


def listen_drops() -> int:
    out = subprocess.run(["nstat", "-a", "TcpExtListenDrops"], capture_output=True, text=True, check=False).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith("TcpExtListenDrops"))


def flood(worker_class: str | None, rate: float, seconds: float, run_dir: Path) -> str:
    """``rate`` inspect requests a second (open loop, bench/openloop.py) at one worker, 1 s bound: what came back."""
    with one_worker(worker_class, run_dir, 1.0) as (port, _):
        host = f"Host: 127.0.0.1:{port}\r\nConnection: close\r\n"
        sent = [f"GET {INSPECT} HTTP/1.1\r\n{host}Authorization: Bearer t{k}\r\n\r\n".encode() for k in range(100)]
        drops = listen_drops()
        # No domain at 127.0.0.1: a served request is a 404, a shed one a 503.
        out = openloop.run("open", port, sent, rate, seconds, ok=(404,))
        drops = listen_drops() - drops
    p99 = openloop.percentile(out.served_ms, 0.99)
    return (
        f"{dict(out.statuses)}, served p99 {p99 or 0:.0f} ms, generator late p99 {out.late_ms:.0f} ms, "
        f"listen drops (the whole machine's) {drops}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=2000, help="requests shed together in each round (2000)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--flood", type=float, metavar="RATE", help="instead: RATE requests a second for 8 s, open loop")
    args = p.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="authsvc-shed-"))
    for label, worker_class in (("at accept (SheddingWorker)", None), ("in WSGI (gunicorn's sync worker)", "sync")):
        if args.flood:
            print(f"{label}: {flood(worker_class, args.flood, 8.0, run_dir)}", flush=True)
            continue
        ms = measure(worker_class, args.requests, args.rounds, run_dir)
        median = sorted(ms)[len(ms) // 2]
        print(f"{label}: {' '.join(f'{v:.3f}' for v in ms)} CPU ms per shed request (median {median:.3f})")


if __name__ == "__main__":
    main()
