"""The servers the test command, the tests and the benchmark need: PostgreSQL, Redis, gunicorn, slapd.

This module finds or starts PostgreSQL and Redis: each is found where the
developer already has one, or started private and throwaway, and stopped by
its own pid when the ``Services`` stack closes.

    with Services(say=print) as services:
        admin_url = services.postgres()            # a server to make databases on
        db = services.database(admin_url, "authsvc_test_1")   # dropped on close
        redis_url = services.redis()               # a private redis-server

The processes themselves (``Process``, ``Gunicorn``, ports, the Procfile) are
in ``devtools.processes``, and OpenLDAP's slapd in ``devtools.slapd``; their
public names are re-exported here, so that the test command, the tests and the
benchmark import every server from this one place.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from devtools.processes import (
    REPO,
    VENV_BIN,
    Gunicorn,
    Process,
    ServiceError,
    children,
    free_port,
    procfile_command,
    tool,
    wait_for_port,
)
from devtools.slapd import SLAPD_SCHEMAS, Slapd, slapd_binary

__all__ = [
    "REPO",
    "SLAPD_SCHEMAS",
    "STANDARD_POSTGRES",
    "VENV_BIN",
    "Database",
    "Gunicorn",
    "Process",
    "ServiceError",
    "Services",
    "Slapd",
    "children",
    "free_port",
    "postgres_answers",
    "postgres_bindir",
    "procfile_command",
    "redact",
    "redis_answers",
    "redis_server",
    "slapd_binary",
    "tool",
    "wait_for_port",
]

# The server a developer or CI usually has, reached as its superuser.
STANDARD_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


def redact(url: str) -> str:
    """``url`` with its password hidden, for printing."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


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
