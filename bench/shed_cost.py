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
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import tempfile
import time
from pathlib import Path

import requests

from bench import seed
from devtools.processes import children
from devtools.services import Gunicorn, free_port

QUEUE_TIMEOUT = 0.2
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def per_request(port: int, worker: int, count: int) -> tuple[float, int]:
    """CPU ms of ``worker`` per request of ``count`` shed together, and how many were answered 503."""
    request = (
        f"GET /api/engine/v2/api_keys/inspect HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
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


def measure(worker_class: str | None, count: int, rounds: int, run_dir: Path) -> list[float]:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "1",
        "SECRET_KEY": secrets.token_urlsafe(32),
        "AUTHSVC_INSTANCE_DIR": str(run_dir),
        "AUTHSVC_QUEUE_TIMEOUT": str(QUEUE_TIMEOUT),
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
        results = []
        for _ in range(rounds):
            ms, shed = per_request(port, worker, count)
            results.append(ms)
        return results
    finally:
        server.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=2000, help="requests shed together in each round (2000)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="authsvc-shed-"))
    for label, worker_class in (("at accept (SheddingWorker)", None), ("in WSGI (gunicorn's sync worker)", "sync")):
        ms = measure(worker_class, args.requests, args.rounds, run_dir)
        median = sorted(ms)[len(ms) // 2]
        print(f"{label}: {' '.join(f'{v:.3f}' for v in ms)} CPU ms per shed request (median {median:.3f})")


if __name__ == "__main__":
    main()
