"""The servers the test command, the tests and the benchmark need: PostgreSQL, Redis, gunicorn.

Each is found where the developer already has one, or started private and
throwaway, and stopped by its own pid when the ``Services`` stack closes.
Every child runs in a session of its own, so a Ctrl-C reaches only the caller,
which then stops them in order.

    with Services(say=print) as services:
        admin_url = services.postgres()            # a server to make databases on
        db = services.database(admin_url, "authsvc_test_1")   # dropped on close
        redis_url = services.redis()               # a private redis-server
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin"
# The server a developer or CI usually has, reached as its superuser.
STANDARD_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


class ServiceError(RuntimeError):
    """A server could not be had; the message says why and what to do."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redact(url: str) -> str:
    """``url`` with its password hidden, for printing."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


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

    def start(self, workers: int = 0, timeout: float = 60.0) -> None:
        """Start it and wait until it listens and, if ``workers``, until that many workers run."""
        argv = procfile_command("web")
        # The Procfile binds 0.0.0.0:$PORT; here it listens on loopback only.
        argv = [argv[0], "-b", f"127.0.0.1:{self.port}", *[self.target if a == "app:app" else a for a in argv[1:]]]
        env = {**self.env, "PORT": str(self.port)}
        self.process = Process(self.name, argv, self.log_path, env=env, cwd=self.cwd).start()
        wait_for_port(self.port, self.process, timeout)
        deadline = time.monotonic() + timeout
        while len(self.workers()) < workers:
            if time.monotonic() > deadline:
                raise ServiceError(f"{self.name}: {workers} workers did not start:\n{self.process.log_tail()}")
            time.sleep(0.1)

    def workers(self) -> list[int]:
        return children(self.process.pid) if self.process and self.process.alive() else []

    def stop(self) -> None:
        if self.process:
            self.process.stop()


# ------------------------------------------------------------------ PostgreSQL


@dataclass
class Database:
    """A database named ``name`` on the server of ``admin_url`` (a superuser's URL)."""

    admin_url: str
    name: str

    @property
    def url(self) -> str:
        """A libpq URL of this database (the service takes it as DATABASE_URL)."""
        parts = urlsplit(self.admin_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + self.name, parts.query, ""))

    def _admin(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5)
        except psycopg.OperationalError as exc:
            raise ServiceError(f"cannot reach PostgreSQL at {redact(self.admin_url)}: {exc}") from None

    def create(self, template: Database | None = None) -> None:
        """(Re)create it empty, or as a copy of ``template`` (which must have no open connection).

        WITH (FORCE) (PostgreSQL 13+) kicks out sessions a killed earlier run may have left.
        """
        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name)))
            create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name))
            if template is not None:
                create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template.name))
            conn.execute(create)

    def drop(self) -> None:
        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name)))

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True)


def postgres_answers(admin_url: str) -> bool:
    try:
        psycopg.connect(admin_url, connect_timeout=3).close()
    except psycopg.Error:
        return False
    return True


def postgres_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl: PATH first, then Debian's versioned dirs, newest first."""
    initdb = shutil.which("initdb")
    if initdb and (Path(initdb).parent / "pg_ctl").exists():
        return Path(initdb).parent

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(p) for p in path.parent.name.split(".") if p.isdigit())

    for bindir in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True):
        if (bindir / "initdb").exists() and (bindir / "pg_ctl").exists():
            return bindir
    return None


# ------------------------------------------------------------------ Redis


def redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def redis_server() -> str | None:
    for candidate in (shutil.which("redis-server"), "/usr/bin/redis-server", "/usr/sbin/redis-server"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


# ------------------------------------------------------------------ the stack


class Services(ExitStack):
    """Servers found or started for one run; what was started is stopped when the stack closes.

    ``say`` prints progress (one line, no prefix); ``workdir`` holds the
    private servers' data and logs (a temporary directory, removed at the end,
    when not given).
    """

    def __init__(self, say: Callable[[str], None] = print, workdir: Path | None = None) -> None:
        super().__init__()
        self.say = say
        self._workdir = workdir
        self.redis_process: Process | None = None

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="authsvc-services-"))
            # The postgres user (when we run as root) must reach its data dir inside.
            self._workdir.chmod(0o711)
            self.callback(shutil.rmtree, self._workdir, ignore_errors=True)
        return self._workdir

    # ---------------------------------------------------------------- PostgreSQL

    def postgres(self, *, standard: bool = True) -> str | None:
        """A superuser's URL of a PostgreSQL server to make databases on, or None when none can be had.

        The server on 127.0.0.1:5432 (a developer's machine, CI) if it answers
        and ``standard``, else a private cluster started from the installed binaries.
        """
        if standard and postgres_answers(STANDARD_POSTGRES):
            self.say("PostgreSQL: using the server on 127.0.0.1:5432")
            return STANDARD_POSTGRES
        bindir = postgres_bindir()
        if bindir is None:
            return None
        self.say(f"PostgreSQL: starting a private cluster ({bindir})")
        port = self._start_private_postgres(bindir)
        if port is None:
            self.say("PostgreSQL: could not start a private cluster")
            return None
        self.say(f"PostgreSQL: private cluster on 127.0.0.1:{port}")
        return f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def database(self, admin_url: str, name: str) -> Database:
        """A fresh, empty database ``name`` on ``admin_url``'s server, dropped when the stack closes."""
        database = Database(admin_url, name)
        database.create()
        self.callback(self._drop_quietly, database)
        return database

    @staticmethod
    def _drop_quietly(database: Database) -> None:
        try:
            database.drop()
        except (ServiceError, psycopg.Error):
            pass  # The server went first (a private cluster stopped): nothing left to drop.

    def _as_postgres_owner(self, argv: list[str]) -> subprocess.CompletedProcess:
        # initdb and postgres refuse to run as root: as root, run them as the
        # postgres user Debian's package creates, from a directory it may enter.
        if os.getuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        return subprocess.run(argv, cwd=self.workdir, stdin=subprocess.DEVNULL, capture_output=True, text=True)

    def _start_private_postgres(self, bindir: Path) -> int | None:
        if os.getuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                self.say("PostgreSQL: running as root and there is no 'postgres' user to run initdb as")
                return None
        home = self.workdir / "pg"
        home.mkdir()
        if os.getuid() == 0:
            shutil.chown(home, "postgres")
        data = home / "data"
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
        init = self._as_postgres_owner([*initdb, "-E", "UTF8", "--locale=C", "--no-sync"])
        if init.returncode != 0:
            self.say(f"PostgreSQL: initdb failed:\n{init.stdout}{init.stderr}")
            return None
        pg_ctl = str(bindir / "pg_ctl")
        # Ours from now on: stopped when the stack closes, whatever happens next.
        self.callback(self._as_postgres_owner, [pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"])
        # The free port is only free until someone else takes it: retry a few times.
        # Settings go into postgresql.conf rather than through pg_ctl -o, which
        # would word-split a temp path that holds spaces.
        for attempt in (1, 2, 3):
            port = free_port()
            with open(data / "postgresql.conf", "a") as conf:
                conf.write(
                    f"port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{home}'\n"
                    "# Throwaway test cluster: durability buys nothing here.\n"
                    "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                )
            log = str(home / "server.log")
            started = self._as_postgres_owner([pg_ctl, "-D", str(data), "-l", log, "-w", "-t", "60", "start"])
            if started.returncode == 0:
                return port
            self.say(f"PostgreSQL: private cluster did not start on port {port} (attempt {attempt})")
        tail = (home / "server.log").read_text(errors="replace").splitlines()[-20:]
        self.say("PostgreSQL: giving up; its log:\n" + "\n".join(tail))
        return None

    # ---------------------------------------------------------------- Redis

    def redis(self, *, shared: bool = False) -> str | None:
        """The URL of a private, non-persistent redis-server; None when none can be had.

        With ``shared``, when there is no redis-server binary, fall back to a
        server already on 127.0.0.1:6379, database 15 (which the tests flush).
        """
        server = redis_server()
        if server:
            url = self._start_private_redis(server)
            if url:
                return url
        if shared and redis_answers(6379):
            self.say(
                "Redis: no redis-server binary to start a private one; using the shared server on "
                "127.0.0.1:6379 — its DATABASE 15 IS FLUSHED"
            )
            return "redis://127.0.0.1:6379/15"
        return None

    def _start_private_redis(self, server: str) -> str | None:
        home = self.workdir / "redis"
        home.mkdir(exist_ok=True)
        for attempt in (1, 2, 3):
            port = free_port()
            argv = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            argv += ["--daemonize", "no", "--dir", str(home)]
            process = Process("redis-server", argv, home / "redis.log").start()
            deadline = time.monotonic() + 10
            while process.alive() and time.monotonic() < deadline:
                if redis_answers(port):
                    self.callback(process.stop)
                    self.redis_process = process
                    self.say(f"Redis: private redis-server on 127.0.0.1:{port} (pid {process.pid})")
                    return f"redis://127.0.0.1:{port}/0"
                time.sleep(0.05)
            process.stop()
            self.say(f"Redis: private redis-server did not answer on port {port} (attempt {attempt})")
        self.say("Redis: giving up; its log:\n" + process.log_tail())
        return None


# ------------------------------------------------------------------ OpenLDAP


def slapd_binary() -> str | None:
    """Debian's slapd (package slapd), if installed."""
    for candidate in (shutil.which("slapd"), "/usr/sbin/slapd"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


SLAPD_SCHEMAS = ("core", "cosine", "inetorgperson", "nis")


@dataclass
class Slapd:
    """A private OpenLDAP ``slapd`` on loopback: ``ldap://`` (StartTLS offered) and ``ldaps://`` ports.

    Its configuration (slapd.conf), database and log live under ``home``. TLS
    uses the certificate and key given (the tests make a CA of their own);
    ``schema`` is extra schema text (e.g. Active Directory's
    userAccountControl). The memberof overlay keeps ``memberOf`` on members of
    groupOfNames entries, as Active Directory does. Anonymous users may only
    bind: searching needs a bind, as a directory in production does.
    """

    home: Path
    suffix: str
    root_dn: str
    root_password: str
    cert_file: Path
    key_file: Path
    schema: str = ""
    ldap_port: int = 0
    ldaps_port: int = 0
    process: Process | None = None

    def _config(self) -> str:
        includes = "".join(f"include /etc/ldap/schema/{name}.schema\n" for name in SLAPD_SCHEMAS)
        if self.schema:
            (self.home / "extra.schema").write_text(self.schema)
            includes += f"include {self.home / 'extra.schema'}\n"
        return (
            f"{includes}"
            f"pidfile {self.home / 'slapd.pid'}\n"
            "modulepath /usr/lib/ldap\nmoduleload back_mdb\nmoduleload memberof\n"
            f"TLSCertificateFile {self.cert_file}\nTLSCertificateKeyFile {self.key_file}\n"
            "database mdb\nmaxsize 10485760\n"
            f'suffix "{self.suffix}"\nrootdn "{self.root_dn}"\nrootpw {self.root_password}\n'
            f"directory {self.home / 'data'}\n"
            "overlay memberof\n"
            "access to attrs=userPassword by self write by anonymous auth by * none\n"
            "access to * by users read by * none\n"
        )

    def start(self, timeout: float = 20.0) -> Slapd:
        (self.home / "data").mkdir(parents=True, exist_ok=True)
        conf = self.home / "slapd.conf"
        conf.write_text(self._config())
        for attempt in (1, 2, 3):
            self.ldap_port, self.ldaps_port = free_port(), free_port()
            urls = f"ldap://127.0.0.1:{self.ldap_port}/ ldaps://127.0.0.1:{self.ldaps_port}/"
            # -d 256 keeps it in the foreground and logs each operation (stats) to its log.
            argv = [slapd_binary() or "slapd", "-f", str(conf), "-h", urls, "-d", "256"]
            self.process = Process("slapd", argv, self.home / "slapd.log").start()
            try:
                wait_for_port(self.ldap_port, self.process, timeout)
                wait_for_port(self.ldaps_port, self.process, timeout)
                return self
            except ServiceError:
                self.process.stop()
                if attempt == 3:
                    raise
        return self

    def pause(self) -> None:
        """Stop answering (SIGSTOP): connections are still accepted by the kernel, nothing is answered."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process:
            self.resume()
            self.process.stop()
