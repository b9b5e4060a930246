"""What the benchmark starts and stops: Redis, a database, gunicorn.

Every process is started in a session of its own (so a Ctrl-C reaches only
the benchmark, which then stops them in order) and stopped by its own pid.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


class BenchError(RuntimeError):
    """The benchmark cannot go on; the message says why."""


def say(message: str) -> None:
    print(f"bench: {message}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tool(name: str) -> str:
    """The virtualenv's copy of a console script, else the one on PATH."""
    candidate = VENV_BIN / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise BenchError(f"{name} is not installed (pip install -r requirements-dev.txt)")
    return found


def procfile_command(kind: str) -> list[str]:
    """The Procfile's command for ``kind`` (``web``, ``release``), split into argv."""
    for line in (REPO / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if name.strip() == kind:
            argv = shlex.split(command)
            argv[0] = tool(argv[0])
            return argv
    raise BenchError(f"the Procfile has no {kind!r} line")


@dataclass
class Process:
    """A child process in its own session, with its output in a log file."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] | None = None
    cwd: Path = REPO
    popen: subprocess.Popen | None = field(default=None, init=False)

    def start(self) -> Process:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, then SIGKILL to its process group (which only it and its children are in)."""
        if not self.alive():
            return
        assert self.popen is not None
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5)
        # Workers of a stopped gunicorn master exit with it; make sure.
        for pid in children(self.popen.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def children(pid: int) -> list[int]:
    """Pids of the live child processes of ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: split after the last ')'.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def rss_mb(pid: int) -> float | None:
    """Resident memory of ``pid`` in MB (MiB), from /proc/PID/status."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def wait_for_port(port: int, process: Process, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.alive():
            raise BenchError(f"{process.name} exited at start:\n{process.log_tail()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise BenchError(f"{process.name} did not listen on port {port} within {timeout:.0f} s")


# ------------------------------------------------------------------ Redis


def start_redis(run_dir: Path) -> tuple[Process | None, str]:
    """A private redis-server on a free port; else ``BENCH_REDIS_URL``. Never the shared one."""
    server = shutil.which("redis-server")
    if server:
        port = free_port()
        process = Process(
            "redis-server",
            [
                server,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(run_dir),
            ],
            run_dir / "redis.log",
        ).start()
        wait_for_port(port, process)
        return process, f"redis://127.0.0.1:{port}/0"
    url = os.environ.get("BENCH_REDIS_URL")
    if url:
        return None, url
    raise BenchError("redis-server is not installed and BENCH_REDIS_URL is not set")


# ------------------------------------------------------------------ PostgreSQL


@dataclass
class Database:
    """A database of the benchmark's own, created on the server of ``admin_url`` and dropped after."""

    admin_url: str
    name: str = "authsvc_bench"

    @property
    def url(self) -> str:
        """A libpq URL of the benchmark's database (the service takes it as DATABASE_URL)."""
        parts = urlsplit(self.admin_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + self.name, parts.query, ""))

    def _admin(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5)
        except psycopg.OperationalError as exc:
            raise BenchError(
                f"cannot reach PostgreSQL ({exc}); set BENCH_DATABASE_URL to a server the benchmark may "
                "create a database on"
            ) from None

    def create(self, template: Database | None = None) -> None:
        """Create it empty, or as a copy of ``template`` (which must have no open connection)."""
        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name)))
            if template is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
            else:
                conn.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                        sql.Identifier(self.name), sql.Identifier(template.name)
                    )
                )

    def drop(self) -> None:
        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name)))

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True)


# ------------------------------------------------------------------ gunicorn


@dataclass
class Gunicorn:
    """A gunicorn master started with the Procfile's web command, bound to loopback."""

    name: str
    target: str  # WSGI target, e.g. "app:app"
    port: int
    env: dict[str, str]
    log_path: Path
    process: Process | None = None
    cwd: Path = REPO  # the checkout served (--before: an earlier one)

    def start(self, workers: int, timeout: float = 60.0) -> None:
        argv = procfile_command("web")
        # The Procfile binds 0.0.0.0:$PORT; a benchmark listens on loopback only.
        argv = [argv[0], "-b", f"127.0.0.1:{self.port}", *[self.target if a == "app:app" else a for a in argv[1:]]]
        env = {**self.env, "PORT": str(self.port)}
        self.process = Process(self.name, argv, self.log_path, env=env, cwd=self.cwd).start()
        wait_for_port(self.port, self.process, timeout)
        deadline = time.monotonic() + timeout
        while len(self.workers()) < workers:
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name}: {workers} workers did not start:\n{self.process.log_tail()}")
            time.sleep(0.1)

    def workers(self) -> list[int]:
        return children(self.process.pid) if self.process and self.process.alive() else []

    def worker_rss_mb(self) -> list[dict]:
        return [{"pid": pid, "rss_mb": rss_mb(pid)} for pid in self.workers()]

    def stop(self) -> None:
        if self.process:
            self.process.stop()
