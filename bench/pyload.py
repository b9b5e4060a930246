"""The fallback load generator: one process per connection, ``http.client``, closed loop.

Used when wrk is not installed (or with ``--generator python``). It drives the
same loads as bench/wrk.py, but spends far more CPU per request, which on a
two-core machine it takes from the server: its figures are lower than wrk's,
and only comparable with other figures of the same generator.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import random
import signal
import time
from array import array
from collections import Counter
from urllib.parse import parse_qs, urlsplit

from bench.load import Load, Result

_START_DELAY = 0.5


def _next_request(load: Load, state: dict, rng: random.Random) -> tuple[str, str, dict[str, str], str | None]:
    if load.kind == "static":
        return load.method, load.path, load.headers, load.body or None
    if load.kind == "bearer":
        return "GET", load.path, {"Authorization": "Bearer " + rng.choice(load.secrets)}, None
    if load.kind == "hosts":
        return "GET", load.path, {"Host": rng.choice(load.secrets)}, None
    if load.kind == "code_flow":
        code = state.pop("code", None)
        if code and load.exchange_body:
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            return "POST", load.exchange_prefix, form, load.exchange_body + code
        if code:
            return "POST", load.exchange_prefix + code, {"Content-Length": "0"}, ""
        return "GET", load.path, load.headers, None
    pool = state["pool"]
    token = pool.pop() if pool else "none-left"
    if load.kind == "once":
        if load.secret_header:
            return load.method, load.path, {**load.headers, load.secret_header: token}, load.body or None
        headers = {"Content-Type": "application/x-www-form-urlencoded", **load.headers}
        return load.method, load.path, headers, load.body + token
    body = f"grant_type=refresh_token&client_id={load.client_id}&refresh_token={token}"
    return "POST", load.token_path, {"Content-Type": "application/x-www-form-urlencoded"}, body


def _after(load: Load, state: dict, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
    if load.kind == "code_flow" and status == 302:
        code = parse_qs(urlsplit(headers.get("Location", "")).query).get("code")
        if code:
            state["code"] = code[0]
    elif load.kind == "refresh" and status == 200:
        state["pool"].append(json.loads(body)["refresh_token"])


def _connection_loop(load: Load, index: int, start: float, deadline: float, out: multiprocessing.Queue) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    rng = random.Random(index)
    state: dict = {"pool": list(load.secrets[index :: load.connections])}
    latencies = array("d")
    statuses: Counter[str] = Counter()
    errors = 0
    conn = http.client.HTTPConnection("127.0.0.1", load.port, timeout=load.timeout)
    time.sleep(max(0.0, start - time.monotonic()))
    while time.monotonic() < deadline:
        method, path, headers, body = _next_request(load, state, rng)
        began = time.perf_counter()
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            errors += 1
            conn.close()
            continue
        latencies.append(time.perf_counter() - began)
        statuses[str(response.status)] += 1
        _after(load, state, response.status, response.headers, data)
        if response.will_close:
            conn.close()
    conn.close()
    out.put((latencies.tobytes(), dict(statuses), errors))


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


class PythonLoad:
    name = "python"

    def run(self, load: Load, duration: float) -> Result:
        ctx = multiprocessing.get_context("fork")
        out = ctx.Queue()
        start = time.monotonic() + _START_DELAY
        deadline = start + duration
        workers = [
            ctx.Process(target=_connection_loop, args=(load, i, start, deadline, out), daemon=True)
            for i in range(load.connections)
        ]
        for w in workers:
            w.start()
        latencies: list[float] = []
        statuses: Counter[str] = Counter()
        errors = 0
        try:
            for _ in workers:
                raw, counts, errs = out.get(timeout=duration + load.timeout + 30)
                chunk = array("d")
                chunk.frombytes(raw)
                latencies.extend(chunk)
                statuses.update(counts)
                errors += errs
        finally:
            for w in workers:
                w.join(5)
                if w.is_alive():
                    w.kill()
        latencies.sort()
        return Result(
            name=load.name,
            generator=self.name,
            duration=duration,
            requests=sum(statuses.values()),
            ok=sum(n for s, n in statuses.items() if int(s) in load.ok),
            p50_ms=_percentile(latencies, 0.50) * 1000,
            p99_ms=_percentile(latencies, 0.99) * 1000,
            p95_ms=_percentile(latencies, 0.95) * 1000,
            statuses=dict(statuses),
            socket_errors=errors,
            connections=load.connections,
        )
