"""Two rows that load the service past its ordinary work: overload, and inspect during a purge.

**Overload** (``--overload``): for inspect and for the token endpoint (client
credentials), the rate the service sustains (``bench/openloop.py``, closed:
``--connections`` clients), then twice that rate, open loop, for as long; what
it answered (statuses; every 503 must carry ``Retry-After``), the p99 of the
answers that were served, and how long after the load stopped a request was
answered as before (five in a row, each served within twice the sustained
phase's p99).

**Purge under load** (``--purge``): inspect on the database with the most
tokens, a slice without and a slice while ``flask --app app tokens purge``
deletes that database's expired tokens; the p99 of both.
bench/README.md, "Overload" and "Ten million tokens".
"""

from __future__ import annotations

import base64
import http.client
import random
import subprocess
import threading
import time
from typing import Any

import psycopg

from bench import openloop, say, seed
from bench.load import Load
from bench.scenarios import INSPECT_PATH
from devtools.services import REPO, tool

RECOVERY_LIMIT_S = 30.0
RECOVERED_AFTER = 5  # answers in a row as before


def _requests(load: Load, count: int = 2000) -> list[bytes]:
    """The raw requests of ``load`` (inspect with a random token, or a static one), each closing its connection."""
    host = f"Host: 127.0.0.1:{load.port}\r\nConnection: close\r\n"
    if load.kind == "bearer":
        tokens = random.sample(load.secrets, min(count, len(load.secrets)))
        return [f"GET {load.path} HTTP/1.1\r\n{host}Authorization: Bearer {t}\r\n\r\n".encode() for t in tokens]
    headers = "".join(f"{k}: {v}\r\n" for k, v in load.headers.items())
    body = load.body.encode()
    length = f"Content-Length: {len(body)}\r\n" if body or load.method == "POST" else ""
    return [f"{load.method} {load.path} HTTP/1.1\r\n{host}{headers}{length}\r\n".encode() + body]


def _probe(port: int, request: bytes, ok: tuple[int, ...]) -> tuple[bool, float]:
    """One request on its own connection: whether it was served, and in how many ms."""
    began = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.connect()
        conn.sock.sendall(request)
        response = http.client.HTTPResponse(conn.sock)
        response.begin()
        response.read()
        served = response.status in ok
    except OSError:
        served = False
    finally:
        conn.close()
    return served, 1000 * (time.monotonic() - began)


def _recovery(port: int, request: bytes, ok: tuple[int, ...], stopped: float, normal_ms: float) -> float | None:
    """Seconds from ``stopped`` to the first of RECOVERED_AFTER answers in a row served within ``normal_ms``."""
    streak_began, streak = None, 0
    while time.monotonic() - stopped < RECOVERY_LIMIT_S:
        sent = time.monotonic()
        served, ms = _probe(port, request, ok)
        if served and ms <= normal_ms:
            streak_began = sent if streak == 0 else streak_began
            streak += 1
            if streak >= RECOVERED_AFTER:
                return max(0.0, streak_began - stopped)
        else:
            streak = 0
        time.sleep(0.02)
    return None


def overload(name: str, load: Load, seconds: float, users: int, queue_timeout: float) -> dict[str, Any]:
    """The overload row of ``load``: sustained rate, then twice it, and the recovery."""
    requests = _requests(load)
    ok = tuple(load.ok)
    sustained = openloop.run("closed", load.port, requests, users, seconds, ok)
    rate = sustained.rate(ok)
    normal_ms = 2 * (openloop.percentile(sustained.served_ms, 0.99) or 10.0)
    say(f"  {name}: sustained {rate:.0f} req/s (p99 {normal_ms / 2:.1f} ms); {2 * rate:.0f} req/s for {seconds:g} s")
    holder: dict[str, openloop.Outcome] = {}
    runner = threading.Thread(
        target=lambda: holder.setdefault("out", openloop.run("open", load.port, requests, 2 * rate, seconds, ok))
    )
    began = time.monotonic()
    runner.start()
    stopped = began + 0.5 + seconds  # openloop.run starts its schedule half a second in
    time.sleep(max(0.0, stopped - time.monotonic()))
    recovery = _recovery(load.port, requests[0], ok, stopped, normal_ms)
    runner.join()
    over = holder["out"]
    p99 = openloop.percentile(over.served_ms, 0.99)
    row = {
        "key": f"overload_{name}",
        "sustained_rps": round(rate, 1),
        "sustained_p99_ms": round(normal_ms / 2, 1),
        "offered_rps": round(over.sent / seconds, 1),
        "seconds": seconds,
        "statuses": dict(over.statuses),
        "without_retry_after": over.without_retry_after,
        "served_rps": round(over.rate(ok), 1),
        "served_p50_ms": _round(openloop.percentile(over.served_ms, 0.5)),
        "served_p99_ms": _round(p99),
        "refused_p99_ms": _round(openloop.percentile(over.unserved_ms, 0.99)),
        "generator_late_p99_ms": round(over.late_ms, 1),
        "recovery_s": _round(recovery, 2),
        "queue_timeout_s": queue_timeout,
    }
    say(
        f"  {name} at 2x: {row['statuses']}, served {row['served_rps']} req/s at p99 {row['served_p99_ms']} ms, "
        f"503 without Retry-After {over.without_retry_after}, back to normal after {row['recovery_s']} s"
    )
    return row


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def token_load(port: int, records: seed.Seed) -> Load:
    """Client credentials at the token endpoint, as the table's row sends them."""
    basic = base64.b64encode(f"{records.machine_client_id}:{records.machine_client_secret}".encode()).decode()
    headers = {"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"}
    return Load("token", port, method="POST", path="/auth/oauth/token", body="grant_type=client_credentials",
                headers=headers)  # fmt: skip


def _first_batch(url: str, purge: subprocess.Popen[str]) -> float:
    """When ``purge`` committed its first batch (the earliest ``purgeable_at`` moved), or ended."""
    with psycopg.connect(url, autocommit=True) as conn:
        earliest = conn.execute("SELECT min(purgeable_at) FROM token").fetchone()
        while purge.poll() is None:
            if conn.execute("SELECT min(purgeable_at) FROM token").fetchone() != earliest:
                break
            time.sleep(0.05)
    return time.monotonic()


def purge_under_load(port: int, secrets: list[str], env: dict[str, str], seconds: float) -> dict[str, Any]:
    """Inspect's p99 in a slice without a purge and in one while ``tokens purge`` runs on the same database."""
    load = Load("inspect", port, "bearer", path=INSPECT_PATH, secrets=secrets)
    requests = _requests(load)
    users = 8
    quiet = openloop.run("closed", port, requests, users, seconds)
    purge = subprocess.Popen(
        [tool("flask"), "--app", "app", "tokens", "purge"], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    )
    ended: dict[str, Any] = {}

    def wait() -> None:
        ended["output"] = purge.communicate(timeout=3600)[0]
        ended["at"] = time.monotonic()

    waiter = threading.Thread(target=wait)
    waiter.start()
    # The command's own start (an interpreter, the app) is not the purge: the slice begins with its first batch.
    deleting = _first_batch(env["DATABASE_URL"], purge)
    busy = openloop.run("closed", port, requests, users, seconds)
    waiter.join()
    purge_s = ended["at"] - deleting
    # The slice starts half a second in (openloop.run): how much of it the purge ran beside.
    overlap = max(0.0, min(seconds, purge_s - 0.5))
    output = ended["output"] or ""
    last = [line for line in output.splitlines() if line.startswith("{")]
    p99_quiet, p99_busy = (openloop.percentile(o.served_ms, 0.99) for o in (quiet, busy))
    row = {
        "key": "purge_under_load",
        "seconds": seconds,
        "p99_ms_without": _round(p99_quiet),
        "p99_ms_during": _round(p99_busy),
        "rps_without": round(quiet.rate((200,)), 1),
        "rps_during": round(busy.rate((200,)), 1),
        "statuses_during": dict(busy.statuses),
        "purge": last[-1] if last else None,
        "purge_s": round(purge_s, 1),  # from its first batch's commit to its end
        "purge_overlapped_s": round(overlap, 1),
    }
    say(
        f"  purge under load: inspect p99 {row['p99_ms_without']} ms without, {row['p99_ms_during']} ms during "
        f"(purge {row['purge']} in {row['purge_s']} s)"
    )
    return row
