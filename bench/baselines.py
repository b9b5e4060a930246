"""The floor for password-based calls: raw ``bcrypt.checkpw`` at the service's cost.

As many processes as gunicorn has workers each check the seeded service
account's password against its stored hash (the very check the password grant
and sign-in make), with nothing else around it.
"""

from __future__ import annotations

import multiprocessing
import signal
import time

import bcrypt

from bench.load import Result


def _default_signals() -> None:
    # The benchmark's own handlers are not for its helpers: its Ctrl-C and SIGTERM stop them plainly.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _checks(password: bytes, password_hash: bytes, start: float, deadline: float) -> tuple[int, float, list[float]]:
    time.sleep(max(0.0, start - time.monotonic()))
    began = time.monotonic()
    done = 0
    last = began
    latencies = []
    while last < deadline:
        t = time.perf_counter()
        if not bcrypt.checkpw(password, password_hash):
            raise RuntimeError("the seeded password does not match its hash")
        latencies.append(time.perf_counter() - t)
        done += 1
        last = time.monotonic()
    return done, last - began, latencies


def bcrypt_rate(password: str, password_hash: str, processes: int, duration: float) -> Result:
    """Checks per second over ``processes`` processes; each counts only checks it completed."""
    ctx = multiprocessing.get_context("fork")
    start = time.monotonic() + 0.3
    args = [(password.encode(), password_hash.encode(), start, start + duration)] * processes
    pool = ctx.Pool(processes, initializer=_default_signals)
    try:
        runs = pool.starmap(_checks, args)
        pool.close()
    finally:
        pool.terminate()
        pool.join()
    rate = sum(done / elapsed for done, elapsed, _ in runs if elapsed > 0)
    latencies = sorted(x for _, _, lat in runs for x in lat)
    total = sum(done for done, _, _ in runs)

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, round(q * (len(latencies) - 1)))] * 1000 if latencies else 0.0

    # Expressed as a Result whose duration makes ``rps`` the summed per-process rate.
    return Result(
        name="bcrypt",
        generator=f"{processes} processes",
        duration=total / rate if rate else duration,
        requests=total,
        ok=total,
        p50_ms=pct(0.5),
        p99_ms=pct(0.99),
        connections=processes,
    )
