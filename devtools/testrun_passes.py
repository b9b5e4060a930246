"""The steps of a test command's run (devtools/testrun.py): the lint (ruff check, lint-imports, ruff format
--check, then mypy beside the passes), the warm-up of a fresh clone (``Run.warm``), the pytest passes, started
with a clean environment, pytest-xdist's workers (``xdist_args``) and a JUnit report each, and run side by side
(``apart``: when each worker of each would have its own Redis) or one after the other; ``Pass`` follows one
pass's output and ends it on a signal (``Stopped``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from devtools.services import REPO, redis_server
from devtools.testrun_report import Results, err, junit_counts, say

PYTHON = sys.executable
# Settings of a developer's own that must not leak into a pass: the tests
# configure the app from the TEST_* variables only.
SCRUBBED = ("DATABASE_URL", "REDIS_URL", "TEST_DATABASE_URL", "TEST_REDIS_URL", "AUTHSVC_TEST_REAL_REDIS_URL")


def clean_environment() -> dict[str, str]:
    """This process's environment without the developer's own settings (``SCRUBBED``)."""
    return {k: v for k, v in os.environ.items() if k not in SCRUBBED}


# The tests mostly wait (on servers, browsers, subprocesses), so more workers than
# cores pays: 4 on 2 cores for a pass alone, 3 a pass when both run at once. Each worker
# has its own database, Redis and tmp dir (tests/conftest.py).
DEFAULT_WORKERS = "4"
DEFAULT_WORKERS_SIDE_BY_SIDE = "3"


class Stopped(BaseException):
    """A signal asks the run to end; the servers are still stopped on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


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


def apart(args: list[str]) -> bool:
    """Whether the passes can run at once: each worker of each then has its own Redis (tests/conftest.py).

    Without workers both passes' tests would use the run's Redis itself; with AUTHSVC_TEST_REDIS_URL
    or no redis-server binary, the workers of both take the same database numbers of one server.
    """
    if os.environ.get("AUTHSVC_TEST_SEQUENTIAL", "").strip() not in ("", "0"):
        return False
    return bool(xdist_args(args)) and not os.environ.get("AUTHSVC_TEST_REDIS_URL") and redis_server() is not None


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


def _rewrites_missing() -> bool:
    """Whether a test module has no assert-rewritten bytecode of this interpreter and pytest, or an older one."""
    from importlib.metadata import version

    suffix = f".{sys.implementation.cache_tag}-pytest-{version('pytest')}.pyc"
    for source in (REPO / "tests").rglob("*.py"):
        if not (source.name.startswith("test_") or source.name == "conftest.py"):
            continue
        cached = source.parent / "__pycache__" / (source.stem + suffix)
        if not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime:
            return True
    return False


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
    results: Results = field(default_factory=Results)
    types: subprocess.Popen | None = None
    types_log: Path | None = None
    types_line: int = 0

    def lint(self) -> None:
        say("lint: ruff check .")
        self.results.record(
            "lint (ruff)", wait_for(subprocess.Popen([str(Path(PYTHON).parent / "ruff"), "check", "."]))
        )
        # The layers of authsvc (pyproject.toml, [tool.importlinter]): no feature imports one above it.
        say("lint: lint-imports")
        self.results.record(
            "lint (import layers)", wait_for(subprocess.Popen([str(Path(PYTHON).parent / "lint-imports")]))
        )
        say("lint: ruff format --check .")
        ruff_format = [str(Path(PYTHON).parent / "ruff"), "format", "--check", "."]
        self.results.record("lint (ruff format)", wait_for(subprocess.Popen(ruff_format)))
        # The types ([tool.mypy] in pyproject.toml): strict on authsvc.core, authsvc.api and authsvc.tokens;
        # no module skipped. From a clean clone (no .mypy_cache) mypy takes 15 CPU-seconds on one core, which
        # the passes' first seconds (every worker collecting) share: it runs beside them (``types``), its
        # output and result line after theirs.
        say("lint: mypy (beside the passes; its output follows theirs)")
        self.types_log = self.workdir / "mypy.log"
        with open(self.types_log, "wb") as log:
            self.types = subprocess.Popen([PYTHON, "-m", "mypy"], stdout=log, stderr=subprocess.STDOUT)
        self.types_line = len(self.results.lines)

    def warm(self, args: list[str]) -> None:
        """Rewrite the tests' asserts once, before the workers start, when a fresh clone has none written yet.

        pytest rewrites the asserts of every test module, conftest and plugin (hypothesis, schemathesis) and
        keeps the result in ``__pycache__``; in a fresh clone with a fresh ``.venv`` nothing is kept, and the
        workers that start together each rewrote everything (a worker's collection took 18 CPU-seconds
        instead of 8.6; 2026-12-03). One collection in one process writes them, beside mypy on the other
        core. Only for the whole suite: a run of a few modules rewrites little.
        """
        if args or not _rewrites_missing():
            return
        say("warming: one collection writes the rewritten tests for every worker (a fresh clone)")
        argv = [PYTHON, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p", "no:cacheprovider"]
        env = {**clean_environment(), "AUTHSVC_TEST_BACKEND": "sqlite"}
        # Its result does not matter: a module that fails to collect fails in the passes, with its reason.
        wait_for(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def types_result(self) -> None:
        """Wait for mypy (started by ``lint``), show its output and record its result with the lint's."""
        if self.types is None or self.types_log is None:
            return
        code = wait_for(self.types)
        self.types = None
        print("== lint: mypy", flush=True)
        sys.stdout.buffer.write(self.types_log.read_bytes())
        sys.stdout.flush()
        self.results.record("lint (types)", code)
        # With the other lint steps' lines, before the passes'.
        self.results.lines.insert(self.types_line, self.results.lines.pop())

    def stop_types(self) -> None:
        """End mypy if it still runs (the run stops early)."""
        if self.types is not None and self.types.poll() is None:
            self.types.kill()
            self.types.wait()

    def start(self, name: str, env: dict[str, str], args: list[str], workers: str, kept: bool) -> Pass:
        """Start one pass; with ``kept`` its output goes to a file, to be shown later (``Pass.follow``)."""
        slug = name.split()[0]
        reports = Path(os.environ.get("AUTHSVC_TEST_REPORTS") or self.workdir)
        reports.mkdir(parents=True, exist_ok=True)
        # The JUnit report feeds the totals line; it goes before the caller's
        # args so that a --junitxml of their own wins (the last one does).
        report = reports / f"junit-{slug}.xml"
        report.unlink(missing_ok=True)
        clean = clean_environment()
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
            self.results.record(
                each.name, 1 if each.code is None else each.code, junit_counts(each.report), each.timing()
            )
