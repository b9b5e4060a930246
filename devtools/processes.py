"""Child processes of the dev tools: where the checkout and its tools are, and the servers' processes.

``Process`` is any server the test command, the tests or the benchmark start
(redis-server, slapd, gunicorn); ``Gunicorn`` is the Procfile's web command on
a loopback port. Every child runs in a session of its own, so a Ctrl-C reaches
only the caller, which then stops them in order, each by its own pid.
PostgreSQL and Redis themselves are found or started by ``devtools.services``.
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

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin"


class ServiceError(RuntimeError):
    """A server could not be had; the message says why and what to do."""


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on, and none this process handed out before.

    Callers pick several ports before any server binds one (the benchmark starts a dozen): the
    kernel may give a port it just gave again, once its probe socket is closed, so two servers
    would be told the same port and one would fail to bind.
    """
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def tool(name: str) -> str:
    """The virtualenv's copy of a console script, else the one on PATH."""
    candidate = VENV_BIN / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise ServiceError(f"{name} is not installed (run ./scripts/test once, or pip install -r requirements-dev.txt)")
    return found


def procfile_command(kind: str) -> list[str]:
    """The Procfile's command for ``kind`` (``web``, ``release``), split into argv, as a deployment runs it."""
    for line in (REPO / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if name.strip() == kind:
            argv = shlex.split(command)
            argv[0] = tool(argv[0])
            return argv
    raise ServiceError(f"the Procfile has no {kind!r} line")


# ------------------------------------------------------------------ processes


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
        # A file, not a pipe: nobody reads a pipe while the server runs, and
        # a full one would block it on its next line.
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

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

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


def wait_for_port(port: int, process: Process, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.alive():
            raise ServiceError(f"{process.name} exited at start:\n{process.log_tail()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise ServiceError(f"{process.name} did not listen on port {port} within {timeout:.0f} s")


# ------------------------------------------------------------------ gunicorn


@dataclass
class Gunicorn:
    """The Procfile's web command (gunicorn) on a loopback port, ``target`` instead of ``app:app``."""

    name: str
    port: int
    env: dict[str, str]
    log_path: Path
    target: str = "app:app"
    process: Process | None = None
    cwd: Path = REPO  # the checkout served (bench --before: an earlier one)
    # A gunicorn command other than the Procfile's, binding 127.0.0.1:$PORT itself (bench's peer, in
    # a virtual environment of its own that has neither authsvc's logger nor config/gunicorn.py's imports).
    command: list[str] | None = None

    def start(self, workers: int = 0, timeout: float = 60.0) -> None:
        """Start it and wait until it listens and, if ``workers``, until that many workers run."""
        argv = procfile_command("web")
        # The Procfile binds 0.0.0.0:$PORT; here it listens on loopback only.
        argv = [argv[0], "-b", f"127.0.0.1:{self.port}", *[self.target if a == "app:app" else a for a in argv[1:]]]
        argv = self.command or argv
        env = {**self.env, "PORT": str(self.port)}
        # The log is appended to: only what this start writes says whether it bound (below).
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.process = Process(self.name, argv, self.log_path, env=env, cwd=self.cwd).start()
        wait_for_port(self.port, self.process, timeout)
        deadline = time.monotonic() + timeout
        # The port answering is not proof that this gunicorn holds it: between free_port() and
        # gunicorn's bind another process (a peer of another test, a client's outgoing port) may
        # take it, and gunicorn retries its bind while the other answers. Its own line says it bound.
        listening = f"Listening at: http://127.0.0.1:{self.port}".encode()
        while listening not in self.log_path.read_bytes()[offset:]:
            if not self.process.alive() or time.monotonic() > deadline:
                raise ServiceError(f"{self.name}: did not bind port {self.port}:\n{self.process.log_tail()}")
            time.sleep(0.05)
        while len(self.workers()) < workers:
            if time.monotonic() > deadline:
                raise ServiceError(f"{self.name}: {workers} workers did not start:\n{self.process.log_tail()}")
            time.sleep(0.1)

    def workers(self) -> list[int]:
        return children(self.process.pid) if self.process and self.process.alive() else []

    def stop(self) -> None:
        if self.process:
            self.process.stop()
