"""The test command's body (``./scripts/test [pytest args...]`` makes .venv, then runs this).

Finds or starts PostgreSQL and Redis (``devtools.services``), runs the lint (ruff check,
ruff format --check, lint-imports, mypy), then runs the suite twice, each pass with the given pytest arguments:

1. postgresql + redis      (the production setup)
2. sqlite + embedded store (the zero-dependency setup)

The two passes run at the same time (they share no database, Redis, port or directory):
the tests mostly wait on servers, browsers and subprocesses, so one pass alone leaves the
cores idle. The first pass's output comes live; the second's is kept and shown once the
first is done, then followed to its end. Both must pass. Each result line gives the pass's
counts, wall time and CPU time; the closing line adds both passes up:
``total: N passed, N failed, N skipped``.

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
  AUTHSVC_TEST_REPORTS       a directory to keep each pass's JUnit report (and the kept output
                             of a pass that ran alongside) in; by default they go with the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import psycopg
from psycopg import sql

from devtools.services import REPO, STANDARD_POSTGRES, ServiceError, Services, redact, redis_server, slapd_binary

PYTHON = sys.executable
BACKENDS = ("postgresql", "sqlite")
# Settings of a developer's own that must not leak into a pass: the tests
# configure the app from the TEST_* variables only.
SCRUBBED = ("DATABASE_URL", "REDIS_URL", "TEST_DATABASE_URL", "TEST_REDIS_URL", "AUTHSVC_TEST_REAL_REDIS_URL")
SIGNAL_EXIT: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def say(message: str) -> None:
    """Progress on stdout: it keeps its place among pytest's output in a CI log."""
    print(f"test: {message}", flush=True)


def err(message: str) -> None:
    print(f"test: {message}", file=sys.stderr, flush=True)


class Stopped(BaseException):
    """A signal asks the run to end; the servers are still stopped on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    # Once is enough: a second Ctrl-C must not cut short the cleanup.
    for other in SIGNAL_EXIT:
        signal.signal(other, signal.SIG_IGN)
    raise Stopped(signum)


WANTED = os.environ.get("AUTHSVC_TEST_BACKENDS", "postgresql,sqlite")
# The tests mostly wait (on servers, browsers, subprocesses), so more workers than
# cores pays: 4 on 2 cores for a pass alone, 3 a pass when both run at once. Each worker
# has its own database, Redis and tmp dir (tests/conftest.py).
DEFAULT_WORKERS = "4"
DEFAULT_WORKERS_SIDE_BY_SIDE = "3"


def chooses_workers(arg: str) -> bool:
    """Whether a pytest argument chooses (or rules out) pytest-xdist's workers itself."""
    return arg in ("--pdb", "--trace", "no:xdist", "-pno:xdist") or arg.startswith(("-n", "--numprocesses", "--dist"))


def xdist_args(args: list[str], default: str = DEFAULT_WORKERS) -> list[str]:
    """``-n N --dist loadscope`` unless the caller's arguments or AUTHSVC_TEST_WORKERS say otherwise."""
    workers = os.environ.get("AUTHSVC_TEST_WORKERS", default).strip()
    if workers in ("", "0") or any(chooses_workers(arg) for arg in args):
        return []
    if workers != "auto" and not workers.isdigit():
        err(f"AUTHSVC_TEST_WORKERS='{workers}': a number of workers, 'auto' or 0")
        sys.exit(2)
    try:
        import xdist  # noqa: F401 - only whether it is there
    except ImportError:
        say("pytest-xdist is not installed: the tests run in one process (pip install pytest-xdist)")
        return []
    # loadscope: a module's tests run on one worker, so that its module-scoped servers (gunicorn,
    # a browser, slapd) start once. (loadgroup's xdist_group does not group under pytest 9.2 with
    # pytest-xdist 3.8: the tests of one group still went to both workers.)
    return ["-n", workers, "--dist", "loadscope"]


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


@dataclass(frozen=True)
class DebianTool:
    """A program some tests need, from Debian's packages, installed by the test command when missing."""

    binary: str  # what is looked for on PATH (or by ``found``)
    packages: tuple[str, ...]
    needed_by: str  # "the browser tests", said in the progress lines
    found: Callable[[], object] | None = None  # how to look for it, when PATH is not where it is
    recommends: bool = True  # whether apt-get brings the packages' recommended ones too


TOOLS = (
    # The browser tests drive Debian's chromium through Playwright; no browser is ever downloaded.
    DebianTool("chromium", ("chromium",), "the browser tests"),
    # The LDAP tests start a private OpenLDAP slapd (usually outside PATH: devtools.services finds it).
    DebianTool("slapd", ("slapd", "ldap-utils"), "the LDAP tests", found=slapd_binary, recommends=False),
    # The SAML tests (and SAML sign-in itself) need xmlsec1, which pysaml2 runs for signatures.
    DebianTool("xmlsec1", ("xmlsec1",), "the SAML tests"),
)


def ensure(tool: DebianTool) -> None:
    """Install ``tool``'s packages with apt-get when it is missing and we may; else say which tests will skip."""
    if tool.found() if tool.found else shutil.which(tool.binary):
        return
    if os.getuid() == 0 and shutil.which("apt-get"):
        say(f"installing Debian's {' and '.join(tool.packages)} for {tool.needed_by} (apt-get)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-qq", *([] if tool.recommends else ["--no-install-recommends"])]
        if all(
            subprocess.run(command, env=env, stdout=subprocess.DEVNULL).returncode == 0
            for command in (["apt-get", "update", "-qq"], [*install, *tool.packages])
        ):
            return
    say(
        f"{tool.binary} is missing and could not be installed (apt-get install {' '.join(tool.packages)}): "
        f"{tool.needed_by} will be SKIPPED"
    )


def postgres_url(services: Services) -> str | None:
    """AUTHSVC_TEST_DATABASE_URL, else a fresh database of this run on a server found or started."""
    given = os.environ.get("AUTHSVC_TEST_DATABASE_URL")
    if given:
        say(f"PostgreSQL: using AUTHSVC_TEST_DATABASE_URL ({redact(given)})")
        return given
    # One database per run, the pid in its name: two runs on one machine (two
    # checkouts, CI beside a developer) must not empty each other's tables.
    name = f"authsvc_test_{os.getpid()}"
    admin_url = services.postgres()
    if admin_url == STANDARD_POSTGRES:
        try:
            database = services.database(admin_url, name)
            say(f"PostgreSQL: fresh database {name} on 127.0.0.1:5432")
            return database.url
        except (ServiceError, psycopg.Error) as exc:
            say(f"PostgreSQL: database {name} could not be created on 127.0.0.1:5432 ({exc}); trying a private cluster")
        admin_url = services.postgres(standard=False)
    if admin_url is None:
        return None
    database = services.database(admin_url, name)
    say(f"PostgreSQL: fresh database {name}")
    return database.url


def drop_worker_databases(url: str) -> None:
    """The databases pytest-xdist's workers made beside ``url``'s (``<name>_gwN``) that a killed worker left."""
    name = url.rsplit("/", 1)[1]
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            pattern = name.replace("_", "\\_") + "\\_gw%"
            rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (pattern,)).fetchall()
            for (leftover,) in rows:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(leftover)))
    except psycopg.Error as exc:
        say(f"PostgreSQL: could not drop the workers' databases ({exc})")


def redis_url(services: Services) -> str | None:
    given = os.environ.get("AUTHSVC_TEST_REDIS_URL")
    if given:
        say(f"Redis: using AUTHSVC_TEST_REDIS_URL ({redact(given)}); its database is flushed by the tests")
        return given
    return services.redis(shared=True)


def junit_counts(path: Path) -> tuple[int, int, int] | None:
    """(passed, failed + errors, skipped) from a pytest JUnit XML report; None without one (``--version``)."""
    try:
        root = ET.parse(path).getroot()  # noqa: S314 - pytest's own report of this run
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return tests - failed - skipped, failed, skipped


def wait_for(process: subprocess.Popen) -> int:
    """Its exit code; on a signal to us, pass it on, let it finish (or kill it after 30 s), and stop."""
    try:
        return process.wait()
    except Stopped as stop:
        process.send_signal(stop.signum)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise


@dataclass
class Pass:
    """One pytest pass under way: its process, JUnit report, and kept output (None: it prints live)."""

    name: str
    process: subprocess.Popen
    report: Path
    log: Path | None
    started: float = field(default_factory=time.monotonic)
    code: int | None = None
    cpu: float = 0.0
    ended: float = 0.0

    def done(self) -> bool:
        """Whether it has ended; then its exit code and the CPU time of its process tree are known."""
        if self.code is None:
            # wait4, not Popen.wait: its rusage is the pass's CPU (pytest, its workers, and what they
            # started and waited for: gunicorn, redis-server, chromium; not the PostgreSQL server).
            pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
            if pid == 0:
                return False
            self.process.returncode = self.code = os.waitstatus_to_exitcode(status)
            self.cpu = usage.ru_utime + usage.ru_stime
            self.ended = time.monotonic()
        return True

    def follow(self) -> None:
        """Show its kept output from the start, then as it comes, until the pass ends."""
        offset = 0
        while True:
            ended = self.done()
            if self.log:
                with open(self.log, "rb") as kept:
                    kept.seek(offset)
                    chunk = kept.read()
                if chunk:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.flush()
                    offset += len(chunk)
            if ended:
                return
            time.sleep(0.5)

    def stop(self, signum: int) -> None:
        """Pass a signal on to the pass's whole session, let it finish (or kill it after 30 s)."""
        if self.done():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)
        deadline = time.monotonic() + 30
        while not self.done():
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
            time.sleep(0.2)

    def timing(self) -> str:
        wall = self.ended - self.started
        return f" in {int(wall // 60)}m{int(wall % 60):02d}s, {self.cpu / 60:.1f} CPU-minutes"


@dataclass
class Run:
    """The steps of one run and their outcome."""

    workdir: Path
    lines: list[str] = field(default_factory=list)
    failed: bool = False
    totals: list[int] | None = None

    def record(self, name: str, code: int, counts: tuple[int, int, int] | None = None, timing: str = "") -> None:
        what = {0: "passed", 5: "FAILED (pytest exit 5: no tests collected)"}.get(code, f"FAILED (exit {code})")
        self.failed |= code != 0
        detail = f" ({counts[0]} passed, {counts[1]} failed, {counts[2]} skipped)" if counts else ""
        self.lines.append(f"== result: {name}: {what}{detail}{timing}")
        if counts:
            self.totals = [a + b for a, b in zip(self.totals or [0, 0, 0], counts, strict=True)]

    def lint(self) -> None:
        say("lint: ruff check .")
        self.record("lint (ruff)", wait_for(subprocess.Popen([str(Path(PYTHON).parent / "ruff"), "check", "."])))
        # The layers of authsvc (pyproject.toml, [tool.importlinter]): no feature imports one above it.
        say("lint: lint-imports")
        self.record("lint (import layers)", wait_for(subprocess.Popen([str(Path(PYTHON).parent / "lint-imports")])))
        say("lint: ruff format --check .")
        ruff_format = [str(Path(PYTHON).parent / "ruff"), "format", "--check", "."]
        self.record("lint (ruff format)", wait_for(subprocess.Popen(ruff_format)))
        # The types ([tool.mypy] in pyproject.toml: strict on authsvc.core and authsvc.api).
        say("lint: mypy")
        self.record("lint (types)", wait_for(subprocess.Popen([PYTHON, "-m", "mypy"])))

    def start(self, name: str, env: dict[str, str], args: list[str], workers: str, kept: bool) -> Pass:
        """Start one pass; with ``kept`` its output goes to a file, to be shown later (``Pass.follow``)."""
        slug = name.split()[0]
        reports = Path(os.environ.get("AUTHSVC_TEST_REPORTS") or self.workdir)
        reports.mkdir(parents=True, exist_ok=True)
        # The JUnit report feeds the totals line; it goes before the caller's
        # args so that a --junitxml of their own wins (the last one does).
        report = reports / f"junit-{slug}.xml"
        report.unlink(missing_ok=True)
        clean = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
        argv = [PYTHON, "-m", "pytest", f"--junitxml={report}", *xdist_args(args, workers), *args]
        log = reports / f"output-{slug}.log" if kept else None
        output = open(log, "wb") if log else None  # noqa: SIM115 - closed as soon as the child has it
        try:
            # A session of its own: a stop reaches the xdist workers too (Pass.stop), not only pytest.
            process = subprocess.Popen(
                argv,
                env={**clean, **env},
                stdout=output,
                stderr=subprocess.STDOUT if output else None,
                start_new_session=True,
            )
        finally:
            if output:
                output.close()
        return Pass(name, process, report, log)

    def passes(self, planned: list[tuple[str, dict[str, str]]], args: list[str], side_by_side: bool) -> None:
        """Run the planned passes, at once or one after the other, and record each."""
        workers = DEFAULT_WORKERS_SIDE_BY_SIDE if side_by_side else DEFAULT_WORKERS
        running: list[Pass] = []
        try:
            if side_by_side:
                for index, (name, env) in enumerate(planned):
                    running.append(self.start(name, env, args, workers, kept=index > 0))
                    if index > 0:
                        print(f"== pass: {name}: runs alongside; its output follows the pass above's", flush=True)
                for current in running:
                    if current.log:
                        print(f"== pass: {current.name} (its output, kept while the pass above ran)", flush=True)
                    current.follow()
            else:
                for name, env in planned:
                    if running:
                        print(f"== pass: {name}", flush=True)
                    running.append(self.start(name, env, args, workers, kept=False))
                    running[-1].follow()
        except Stopped as stop:
            for each in running:
                each.stop(stop.signum)
            raise
        for each in running:
            self.record(each.name, 1 if each.code is None else each.code, junit_counts(each.report), each.timing())

    def summary(self) -> int:
        print()
        print("\n".join(self.lines))
        # Both passes added up, in the plain "N passed, N failed" form that CI
        # reads as the closing line of the run.
        if self.totals:
            print(f"total: {self.totals[0]} passed, {self.totals[1]} failed, {self.totals[2]} skipped")
        return 1 if self.failed else 0


def run(args: list[str]) -> int:
    backends = selected_backends()
    postgres = "postgresql" in backends
    for tool in TOOLS:
        ensure(tool)
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
        planned: list[tuple[str, dict[str, str]]] = []
        if postgres and database and redis:  # both there: a pass without them has returned above
            print(f"== pass: postgresql + redis ({redact(database)}, {redact(redis)})", flush=True)
            env = {"AUTHSVC_TEST_BACKEND": "postgresql", "TEST_DATABASE_URL": database, "TEST_REDIS_URL": redis}
            if not os.environ.get("AUTHSVC_TEST_DATABASE_URL"):
                # However the run ends (a killed worker leaves its database, Ctrl-C, SIGTERM).
                services.callback(drop_worker_databases, database)
            planned.append(("postgresql + redis", {**env, **real_redis}))
        else:
            run.lines.append(f"== result: postgresql + redis: NOT RUN (AUTHSVC_TEST_BACKENDS={WANTED})")
        if "sqlite" in backends:
            if not planned:
                print("== pass: sqlite + embedded store", flush=True)
            planned.append(("sqlite + embedded store", {"AUTHSVC_TEST_BACKEND": "sqlite", **real_redis}))
        # Each pass knows the others (tests.helpers.fuzz_examples: the SQLite pass fuzzes less only
        # beside the PostgreSQL one).
        passes = ",".join(env["AUTHSVC_TEST_BACKEND"] for _, env in planned)
        planned = [(name, {**env, "AUTHSVC_TEST_PASSES": passes}) for name, env in planned]
        run.passes(planned, args, side_by_side=len(planned) > 1 and apart(args))
        return run.summary()


def apart(args: list[str]) -> bool:
    """Whether the passes can run at once: each worker of each then has its own Redis (tests/conftest.py).

    Without workers both passes' tests would use the run's Redis itself; with AUTHSVC_TEST_REDIS_URL
    or no redis-server binary, the workers of both take the same database numbers of one server.
    """
    if os.environ.get("AUTHSVC_TEST_SEQUENTIAL", "").strip() not in ("", "0"):
        return False
    return bool(xdist_args(args)) and not os.environ.get("AUTHSVC_TEST_REDIS_URL") and redis_server() is not None


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
