"""The test command's body (``./scripts/test [pytest args...]`` makes .venv, then runs this).

Finds or starts PostgreSQL and Redis (``devtools.services``), runs the lint (ruff check,
ruff format --check, lint-imports; mypy beside the passes), in a fresh clone writes pytest's
rewritten tests once (``Run.warm``), then runs the suite twice, each pass with the given pytest
arguments:

1. postgresql + redis      (the production setup)
2. sqlite + embedded store (the zero-dependency setup)

The two passes run at the same time (they share no database, Redis, port or directory):
the tests mostly wait on servers, browsers and subprocesses, so one pass alone leaves the
cores idle. The first pass's output comes live; the second's is kept and shown once the
first is done, then followed to its end. Both must pass. Each result line gives the pass's
counts, wall time and CPU time; the closing line adds both passes up:
``total: N passed, N failed, N skipped``.

Its parts: ``devtools.testrun_services`` (the Debian tools, the PostgreSQL database and the Redis of a run),
``devtools.testrun_passes`` (the lint and the passes) and ``devtools.testrun_report`` (the progress lines, the
result lines and the totals line); this module reads the knobs, plans the passes and handles the signals.

Environment knobs:
  AUTHSVC_TEST_BACKENDS      comma list of passes to run; default "postgresql,sqlite".
                             "sqlite" alone needs neither PostgreSQL nor Redis.
  AUTHSVC_TEST_DATABASE_URL  PostgreSQL database to use as is, instead of a fresh
                             authsvc_test_<pid> (dropped at the end) on 127.0.0.1:5432
                             or on a private cluster.
  AUTHSVC_TEST_REDIS_URL     Redis to use instead of a private redis-server per worker.
                             Its database is FLUSHED (with workers: DB+N for worker N).
  AUTHSVC_TEST_WORKERS       pytest-xdist workers per pass (default 3 when the passes run side
                             by side, 4 for a pass alone; "auto": one per core;
                             0: none, the tests run in the pytest process). Not added when the
                             arguments choose (-n, --numprocesses, --dist, -p no:xdist) or
                             debug (--pdb, --trace), or pytest-xdist is not installed.
  AUTHSVC_TEST_SEQUENTIAL    1: run the passes one after the other. They do anyway without
                             workers, or when they would share a Redis (AUTHSVC_TEST_REDIS_URL,
                             or no redis-server binary for a private one per worker).
  AUTHSVC_TEST_NODE_MODULES  a node_modules folder holding the tests' Node peers; set by the run itself
                             (devtools/npm_peers.py installs tests/peers/node/package-lock.json with npm ci).
  AUTHSVC_TEST_REPORTS       a directory to keep each pass's JUnit report (and the kept output
                             of a pass that ran alongside) in; by default they go with the run.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from devtools import npm_peers
from devtools.services import REPO, ServiceError, Services, redact
from devtools.testrun_passes import Run, Stopped, apart
from devtools.testrun_report import err, say
from devtools.testrun_services import TOOLS, drop_worker_databases, ensure, postgres_url, redis_url

BACKENDS = ("postgresql", "sqlite")
SIGNAL_EXIT: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def _stop(signum: int, frame: FrameType | None) -> None:
    # Once is enough: a second Ctrl-C must not cut short the cleanup.
    for other in SIGNAL_EXIT:
        signal.signal(other, signal.SIG_IGN)
    raise Stopped(signum)


WANTED = os.environ.get("AUTHSVC_TEST_BACKENDS", "postgresql,sqlite")


def selected_backends() -> set[str]:
    wanted = WANTED
    chosen = {name.strip() for name in wanted.split(",") if name.strip()}
    for name in chosen - set(BACKENDS):
        err(f"AUTHSVC_TEST_BACKENDS: unknown backend '{name}' (known: {', '.join(BACKENDS)})")
        sys.exit(2)
    if not chosen:
        err(f"AUTHSVC_TEST_BACKENDS='{wanted}' selects no pass")
        sys.exit(2)
    return chosen


def node_peers() -> None:
    """Install the tests' pinned Node peers (devtools/npm_peers.py) and tell the passes where they are."""
    try:
        os.environ[npm_peers.ENVIRONMENT] = str(npm_peers.install())
    except npm_peers.PeersMissing as exc:
        say(f"{exc}: the tests that need them (axe-core: the accessibility tests) will be SKIPPED")


def run(args: list[str]) -> int:
    backends = selected_backends()
    postgres = "postgresql" in backends
    for tool in TOOLS:
        ensure(tool)
    node_peers()
    with Services(say=say) as services:
        run = Run(services.workdir)
        database = postgres_url(services) if postgres else None
        if postgres and database is None:
            err(
                "PostgreSQL is missing: no AUTHSVC_TEST_DATABASE_URL, nothing answers on 127.0.0.1:5432, and no "
                "initdb/pg_ctl to start a private cluster."
            )
            err(
                "  Install it (Debian/Ubuntu: apt-get install postgresql), or set "
                "AUTHSVC_TEST_DATABASE_URL=postgresql://USER@HOST:PORT/DB (a database the tests may fill),"
            )
            err("  or run only the SQLite pass: AUTHSVC_TEST_BACKENDS=sqlite ./scripts/test")
            return 1
        # Redis is looked for even for the SQLite pass alone, for the tests
        # that want a real server (AUTHSVC_TEST_REAL_REDIS_URL); only then optional.
        redis = redis_url(services)
        if redis is None and postgres:
            err(
                "Redis is missing: no AUTHSVC_TEST_REDIS_URL, no redis-server binary to start a private one, and "
                "nothing answers on 127.0.0.1:6379."
            )
            err(
                "  Install it (Debian/Ubuntu: apt-get install redis-server), or set "
                "AUTHSVC_TEST_REDIS_URL=redis://HOST:PORT/DB (that database is FLUSHED),"
            )
            err("  or run only the SQLite pass: AUTHSVC_TEST_BACKENDS=sqlite ./scripts/test")
            return 1
        if redis is None:
            say("Redis: none found; fine for the SQLite pass alone, but AUTHSVC_TEST_REAL_REDIS_URL is not set")
        real_redis = {"AUTHSVC_TEST_REAL_REDIS_URL": redis} if redis else {}
        if not postgres:
            say(f"AUTHSVC_TEST_BACKENDS={WANTED}: only the SQLite pass runs; PostgreSQL + Redis are NOT tested")

        run.lint()
        services.callback(run.stop_types)
        planned: list[tuple[str, dict[str, str]]] = []
        if postgres and database and redis:  # both there: a pass without them has returned above
            print(f"== pass: postgresql + redis ({redact(database)}, {redact(redis)})", flush=True)
            env = {"AUTHSVC_TEST_BACKEND": "postgresql", "TEST_DATABASE_URL": database, "TEST_REDIS_URL": redis}
            if not os.environ.get("AUTHSVC_TEST_DATABASE_URL"):
                # However the run ends (a killed worker leaves its database, Ctrl-C, SIGTERM).
                services.callback(drop_worker_databases, database)
            planned.append(("postgresql + redis", {**env, **real_redis}))
        else:
            run.results.lines.append(f"== result: postgresql + redis: NOT RUN (AUTHSVC_TEST_BACKENDS={WANTED})")
        if "sqlite" in backends:
            if not planned:
                print("== pass: sqlite + embedded store", flush=True)
            planned.append(("sqlite + embedded store", {"AUTHSVC_TEST_BACKEND": "sqlite", **real_redis}))
        # Each pass knows the others (tests.helpers.fuzz_examples: the SQLite pass fuzzes less only
        # beside the PostgreSQL one).
        passes = ",".join(env["AUTHSVC_TEST_BACKEND"] for _, env in planned)
        planned = [(name, {**env, "AUTHSVC_TEST_PASSES": passes}) for name, env in planned]
        run.warm(args)
        run.passes(planned, args, side_by_side=len(planned) > 1 and apart(args))
        run.types_result()
        return run.results.summary()


def main() -> None:
    os.chdir(REPO)
    # Every process of a run (8 pytest processes, the gunicorns and CLIs the tests start) imports
    # the same modules: with PYTHONDONTWRITEBYTECODE set (some machines set it for everyone) each
    # one compiled authsvc and the tests again, and pytest rewrote the asserts of every module of
    # its plugins' packages (schemathesis, hypothesis) again: half of a collection's 12 CPU-seconds.
    # The caches go to __pycache__ directories, which git ignores.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # Private servers must go away however we leave: normal end, failure,
    # Ctrl-C (pytest gets the SIGINT too and stops), or kill.
    for signum in SIGNAL_EXIT:
        signal.signal(signum, _stop)
    try:
        code = run(sys.argv[1:])
    except Stopped as stop:
        code = SIGNAL_EXIT[stop.signum]
    except ServiceError as exc:
        err(str(exc))
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
