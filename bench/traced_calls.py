"""What OpenTelemetry traces cost per request, in process: each row with traces off, then on, in one run.

Inspect (a bearer token, called as a gunicorn worker calls the app: bench/inspect_calls.py), the
code flow (an authorisation and an exchange: two requests) and client credentials (bench/calls.py)
are measured with no ``OTEL_`` variable, as a deployment without traces runs; then the standard
OpenTelemetry environment is set, a second app is made (authsvc.web.traces starts the SDK and the
instrumentation of Flask, SQLAlchemy, Redis and requests) and the same requests are measured as
"(traced)". Every request is sampled (``always_on``, the most a request can cost), and the spans
go through the service's own pipeline, the batch processor and the OTLP/HTTP exporter, to a
collector on loopback that keeps nothing (bench/otlp_sink.py, another process). The batch
processor's thread is held back (OTEL_BSP_*, below) and the export runs at the end of each
measured window, in the measuring thread (``settle``): cProfile counts it, and CPU and callgrind
count it within the window. Against the stack of ``python -m bench --serve``::

    .venv/bin/python -m bench --serve --tokens 10000 --database calls   # in another terminal
    .venv/bin/python -m bench.traced_calls bench/results/serve-calls.json redis://127.0.0.1:PORT/0 [--cpu N]

``--callgrind`` counts instructions instead (under ``valgrind --tool=callgrind --instr-atstart=no``, as
bench/calls.py). The rows without traces are measured first, before anything of OpenTelemetry is
instrumented; they are the figures of ``python -m bench.calls`` and ``bench.inspect_calls``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from bench import calls, otlp_sink
from bench.inspect_calls import _request
from bench.scenarios import INSPECT_PATH
from bench.seed import HOST

ROWS = ("inspect_bearer", "code_flow", "client_credentials")
TRACES_ON = {
    "OTEL_SERVICE_NAME": "authsvc-bench",
    "OTEL_TRACES_SAMPLER": "always_on",
    # No export from the processor's thread during a window: it exports when the window's end flushes it.
    "OTEL_BSP_SCHEDULE_DELAY": "3600000",
    "OTEL_BSP_MAX_QUEUE_SIZE": "65536",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "65536",
}
Rows = dict[str, tuple[Callable[[], object], int]]


def _rows(serve_json: Path, redis_url: str) -> Rows:
    """The three requests on a new app (made with the environment as it is now)."""
    chosen = calls.scenarios(serve_json, redis_url)
    from authsvc import create_app

    token = next(iter(json.loads(serve_json.read_text())["inspect_tokens"].values()))[0]
    inspect = _request(create_app(), INSPECT_PATH, {"Host": HOST, "Authorization": f"Bearer {token}"})
    return {"inspect_bearer": (inspect, 1)} | {key: chosen[key] for key in ROWS[1:]}


def measure(serve_json: Path, redis_url: str, runs: int, callgrind: bool) -> list[tuple[str, str]]:
    """Each row off, then each on: (label, figures) in that order."""
    assert not any(name.startswith("OTEL_") for name in os.environ), "unset the OTEL_ variables first"
    untraced = _rows(serve_json, redis_url)
    results = [
        _one(key, request, per_run, runs, callgrind, dump, lambda: None)
        for dump, (key, (request, per_run)) in enumerate(untraced.items(), start=1)
    ]
    sink, url = otlp_sink.start()
    try:
        os.environ.update(TRACES_ON, OTEL_EXPORTER_OTLP_ENDPOINT=url)
        traced = _rows(serve_json, redis_url)
        from authsvc.web import traces_sdk

        for dump, (key, (request, per_run)) in enumerate(traced.items(), start=len(ROWS) + 1):
            results.append(_one(f"{key} (traced)", request, per_run, runs, callgrind, dump, traces_sdk.flush))
    finally:
        sink.terminate()
        sink.wait()
    return results


def _one(
    label: str,
    request: Callable[[], object],
    per_run: int,
    runs: int,
    callgrind: bool,
    dump: int,
    settle: Callable[[], object],
) -> tuple[str, str]:
    measured = calls.MEASURED
    if callgrind:
        count = calls.instructions(label.split()[0], request, measured, dump, settle) / measured / per_run
        return label, f"{count / 1e6:7.3f} M instructions per request"
    stats = calls.profiled(request, calls.WARMUP, measured, settle)
    line = f"{stats.total_calls / measured / per_run:8.0f} Python calls per request"  # type: ignore[attr-defined]
    if runs:
        line += f"  {calls.cpu_ms(request, runs, settle=settle) / per_run:7.3f} ms CPU per request"
    return label, line


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.traced_calls", description=__doc__.split("\n\n")[0])
    parser.add_argument("serve_json", type=Path, help="the JSON that `python -m bench --serve` wrote")
    parser.add_argument("redis_url", help="the Redis URL that `python -m bench --serve` printed")
    parser.add_argument("--cpu", type=int, default=0, metavar="N", help="also CPU ms per request over N requests")
    parser.add_argument("--callgrind", action="store_true", help="instructions per request (under callgrind)")
    args = parser.parse_args(argv)
    for label, figures in measure(args.serve_json, args.redis_url, args.cpu, args.callgrind):
        print(f"{label:30s} {figures}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
