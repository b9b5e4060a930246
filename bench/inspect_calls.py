"""Python function calls per inspect request, in process, as a gunicorn worker makes them.

The counterpart of ``bench/calls.py`` for inspect: it calls the WSGI
application itself (what gunicorn's worker calls, with the environ it
builds, the answer's body read and closed), not Flask's test client, whose
own environ building would be most of the count. Against the stack of
``python -m bench --serve`` (its PostgreSQL database and Redis)::

    .venv/bin/python -m bench --serve --tokens 10000 --database calls   # in another terminal
    .venv/bin/python -m bench.inspect_calls bench/results/serve-calls.json redis://127.0.0.1:PORT/0 [TOP]

It counts (cProfile) 200 requests of each kind after 50 unmeasured ones:
the bare route, inspect with ``Authorization: Bearer`` and with
``X-API-Key`` (both as the benchmark's rows send them), and prints the TOP
(default 0) functions of each by calls.
"""

from __future__ import annotations

import io
import os
import pstats
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.calls import profiled, worker_environment
from bench.scenarios import INSPECT_PATH
from bench.seed import HOST

WARMUP, MEASURED = 50, 200


def _environ(path: str, headers: dict[str, str]) -> dict[str, Any]:
    """What gunicorn's sync worker passes for a keep-alive GET (wrk's request) on plain HTTP."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "RAW_URI": path,
        "QUERY_STRING": "",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "50000",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.file_wrapper": None,
        "wsgi.input_terminated": True,
    }
    for name, value in headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


def _request(app: Callable[..., Iterable[bytes]], path: str, headers: dict[str, str]) -> Callable[[], None]:
    def once() -> None:
        environ = _environ(path, headers)
        environ["wsgi.input"] = io.BytesIO()
        statuses: list[str] = []
        body = app(environ, lambda status, response_headers, exc_info=None: statuses.append(status))
        try:
            for _ in body:
                pass
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        assert statuses[0].startswith("200"), (statuses, path, headers)

    return once


def count(serve_json: Path, redis_url: str, top: int = 0) -> dict[str, float]:
    """Python calls per request of the bare route and of inspect (bearer, API key)."""
    info = worker_environment(serve_json, redis_url)
    # As config/gunicorn.py sets it for the workers: metrics in files, so each sample costs what it does there.
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="authsvc-calls-metrics-"))
    from authsvc import create_app
    from bench.bare_app import app as bare_app

    app = create_app()
    token = next(iter(info["inspect_tokens"].values()))[0]
    scenarios = {
        "bare": _request(bare_app, "/", {"Host": "127.0.0.1:8000"}),
        "inspect_bearer": _request(app, INSPECT_PATH, {"Host": HOST, "Authorization": f"Bearer {token}"}),
        "inspect_api_key": _request(app, INSPECT_PATH, {"Host": HOST, "X-API-Key": info["api_key"]}),
    }
    if top:
        _print_plans(app, token, info["api_key"])
    calls = {}
    for key, request in scenarios.items():
        stats = profiled(request, WARMUP, MEASURED)
        calls[key] = stats.total_calls / MEASURED  # type: ignore[attr-defined]
        if top:
            _print_top(key, stats, top)
    return calls


def _print_top(key: str, stats: pstats.Stats, top: int) -> None:
    """The ``top`` functions by calls, and the calls per request by package or module."""
    by_place: Counter[str] = Counter()
    rows = []
    for (filename, line, name), (_, ncalls, *_rest) in stats.stats.items():  # type: ignore[attr-defined]
        place = filename.split("site-packages/")[-1].split("/work/wt/")[-1]
        by_place[place.split("/")[0] if "site-packages" in filename else place] += ncalls
        rows.append((ncalls, f"{place}:{line}({name})"))
    print(f"--- {key}: {stats.total_calls / MEASURED:.1f} calls per request")  # type: ignore[attr-defined]
    for place, ncalls in by_place.most_common():
        print(f"{ncalls / MEASURED:8.1f}  {place}")
    print("  top functions:")
    for ncalls, where in sorted(rows, reverse=True)[:top]:
        print(f"{ncalls / MEASURED:8.1f}  {where}")


def _print_plans(app: Any, token: str, api_key: str) -> None:
    """Each lookup's plan as a reader's session runs it (generic), with the buffers it reads: the database's count."""
    from psycopg import sql

    from authsvc.core import security
    from authsvc.core.readers.pool import READERS, _Prepared
    from authsvc.tokens import presented

    readers = app.extensions[READERS]
    values = {"digest": security.digest(token), "key_id": api_key.split(".")[0], "host": HOST, "default_host": None}
    statements = {
        "token": presented.TOKEN_CLAIMS_BY_HOST,
        "api key": presented.API_KEY_CLAIMS_BY_HOST,
    }
    for name, statement in statements.items():
        prepared = _Prepared.of(statement, readers.dialect)
        arguments = sql.SQL(", ").join(sql.Literal(values[p]) for p in prepared.parameters)
        with readers.pool.connection() as connection:
            connection.execute(sql.SQL("PREPARE calls_plan AS {}").format(sql.SQL(prepared.sql.decode())))
            try:
                connection.execute("SET plan_cache_mode = force_generic_plan")
                explain = sql.SQL(
                    "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE calls_plan({})"
                )
                plan = [row[0] for row in connection.execute(explain.format(arguments))]
            finally:
                connection.execute("DEALLOCATE calls_plan")
                connection.execute("RESET plan_cache_mode")
        buffers = next((line.strip() for line in plan if "Buffers:" in line), "")
        print(f"--- {name} lookup, generic plan ({buffers})")
        print("\n".join(plan))


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    for key, value in count(Path(argv[0]), argv[1], int(argv[2]) if len(argv) == 3 else 0).items():
        print(f"{key:20s} {value:8.1f} Python calls per request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
