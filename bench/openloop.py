"""A load at a fixed rate, whatever the server does (open loop): the overload row's generator.

wrk and the Python generator of bench/pyload.py are closed loops: each
connection sends its next request when the last one is answered, so a slow
server is sent less, and no queue forms beyond the connections. An overload
is requests arriving faster than they are served, so this one sends each
request at its scheduled moment on a connection of its own (as the clients
of many machines would), however many are still waiting, and times each from
that moment (a late start counts against the server, not for it). The same
code, closed (``users`` connections, each sending its next request when the
last is answered), measures the rate the service sustains, so both phases
cost the generator the same per request.

asyncio protocols in ``PROCESSES`` processes; each request is one connection
(gunicorn's sync workers close it after the answer).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import resource
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

PROCESSES = 2
# Connections one process keeps open at most: past it a request is not sent, and counted as such.
MAX_OPEN = 8000
Ok = tuple[int, ...]  # the statuses that count as served


@dataclass
class Outcome:
    """What one phase measured: statuses (and ``timeout``, ``error``, ``not sent``), latencies of the served."""

    seconds: float
    statuses: Counter[str] = field(default_factory=Counter)
    served_ms: list[float] = field(default_factory=list)
    unserved_ms: list[float] = field(default_factory=list)
    without_retry_after: int = 0
    late_ms: float = 0.0  # how late the generator sent its requests, at worst (the 99th percentile)

    @property
    def sent(self) -> int:
        return sum(self.statuses.values())

    def rate(self, statuses: tuple[int, ...]) -> float:
        return sum(self.statuses.get(str(s), 0) for s in statuses) / self.seconds if self.seconds else 0.0


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class _Exchange(asyncio.Protocol):
    """One request on a connection of its own: sends it, reads the answer to the end."""

    def __init__(self, request: bytes, done: asyncio.Future[bytes]):
        self.request = request
        self.done = done
        self.head = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        if len(self.head) < 2048:
            self.head += data

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(self.head)


async def _one(
    loop: asyncio.AbstractEventLoop, port: int, request: bytes, scheduled: float, timeout: float, out: Outcome, ok: Ok
) -> None:
    done: asyncio.Future[bytes] = loop.create_future()
    transport = None
    try:
        transport, _ = await asyncio.wait_for(
            loop.create_connection(lambda: _Exchange(request, done), "127.0.0.1", port), timeout
        )
        head = await asyncio.wait_for(done, max(0.001, scheduled + timeout - time.monotonic()))
    except TimeoutError:
        out.statuses["timeout"] += 1
        return
    except OSError:
        out.statuses["error"] += 1
        return
    finally:
        if transport is not None:
            transport.close()
    elapsed = 1000 * (time.monotonic() - scheduled)
    status_line, _, rest = head.partition(b"\r\n")
    parts = status_line.split()
    status = parts[1].decode() if len(parts) > 1 and parts[1].isdigit() else "error"
    out.statuses[status] += 1
    if status != "error" and int(status) in ok:
        out.served_ms.append(elapsed)
    else:
        out.unserved_ms.append(elapsed)
    if status == "503" and b"\r\nretry-after:" not in b"\r\n" + rest.split(b"\r\n\r\n", 1)[0].lower():
        out.without_retry_after += 1


async def _open(
    port: int, requests: list[bytes], rate: float, seconds: float, start: float, timeout: float, ok: Ok
) -> Outcome:
    """Requests at ``rate`` a second for ``seconds`` from ``start``, each on time however many are open."""
    loop = asyncio.get_running_loop()
    out = Outcome(seconds)
    pending: set[asyncio.Task[None]] = set()
    late: list[float] = []
    total = int(rate * seconds)
    await asyncio.sleep(max(0.0, start - time.monotonic()))
    for k in range(total):
        scheduled = start + k / rate
        wait = scheduled - time.monotonic()
        if wait > 0.002:
            await asyncio.sleep(wait)
        late.append(max(0.0, time.monotonic() - scheduled))
        if len(pending) >= MAX_OPEN:
            out.statuses["not sent"] += 1
            continue
        task = loop.create_task(_one(loop, port, requests[k % len(requests)], scheduled, timeout, out, ok))
        pending.add(task)
        task.add_done_callback(pending.discard)
    if pending:
        await asyncio.wait(pending)
    out.late_ms = 1000 * (percentile(late, 0.99) or 0.0)
    return out


async def _closed(
    port: int, requests: list[bytes], users: int, seconds: float, start: float, timeout: float, ok: Ok
) -> Outcome:
    """``users`` clients, each sending its next request when the last is answered, for ``seconds``."""
    loop = asyncio.get_running_loop()
    out = Outcome(seconds)
    await asyncio.sleep(max(0.0, start - time.monotonic()))
    end = start + seconds

    async def user(index: int) -> None:
        k = index
        while time.monotonic() < end:
            await _one(loop, port, requests[k % len(requests)], time.monotonic(), timeout, out, ok)
            k += users

    await asyncio.gather(*(user(i) for i in range(users)))
    return out


def _process(
    mode: str,
    port: int,
    requests: list[bytes],
    load: float,
    seconds: float,
    start: float,
    timeout: float,
    ok: Ok,
    q: Any,
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 2 * MAX_OPEN + 100)), hard))
    random.shuffle(requests)
    if mode == "open":
        out = asyncio.run(_open(port, requests, load, seconds, start, timeout, ok))
    else:
        out = asyncio.run(_closed(port, requests, int(load), seconds, start, timeout, ok))
    q.put(out)


def run(
    mode: str, port: int, requests: list[bytes], load: float, seconds: float, ok: Ok = (200,), timeout: float = 10.0
) -> Outcome:
    """``mode`` "open": ``load`` requests a second in all; "closed": ``load`` users in all. Over PROCESSES processes."""
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    start = time.monotonic() + 0.5
    share = load / PROCESSES
    procs = [
        ctx.Process(
            target=_process,
            args=(mode, port, requests[i::PROCESSES] or requests, share, seconds, start, timeout, ok, q),
        )
        for i in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    merged = Outcome(seconds)
    for _ in procs:
        part: Outcome = q.get(timeout=seconds + timeout + 60)
        merged.statuses.update(part.statuses)
        merged.served_ms += part.served_ms
        merged.unserved_ms += part.unserved_ms
        merged.without_retry_after += part.without_retry_after
        merged.late_ms = max(merged.late_ms, part.late_ms)
    for p in procs:
        p.join(5)
    return merged
