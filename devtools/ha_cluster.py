"""Throwaway replicated clusters on loopback for the high-availability tests and drill.

``RedisSentinels``: a Redis primary, replicas and Sentinels (``redis-server
--sentinel``), each a process of ours. ``PostgresPair``: a PostgreSQL primary
and a streaming replica (``pg_basebackup -R``), synchronously replicated,
promoted with ``pg_ctl promote``. As root, PostgreSQL runs as the ``postgres``
user (devtools.services does the same). Every process is stopped by its pid
when the stack closes.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg

from devtools.processes import Process, ServiceError, free_port
from devtools.services import postgres_bindir, redis_answers, redis_server

SERVICE = "authsvc"


def missing_binaries() -> str | None:
    """Why the clusters cannot be started here, or None."""
    if redis_server() is None:
        return "no redis-server binary (Debian: apt-get install redis-server)"
    if postgres_bindir() is None or not shutil.which("pg_basebackup") and not _bin("pg_basebackup"):
        return "no PostgreSQL binaries (initdb, pg_ctl, pg_basebackup)"
    if os.getuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run PostgreSQL as"
    return None


def _bin(name: str) -> str | None:
    bindir = postgres_bindir()
    if bindir is not None and (bindir / name).exists():
        return str(bindir / name)
    return shutil.which(name)


def _wait(check, timeout: float, what: str) -> None:  # noqa: ANN001 - a predicate
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise ServiceError(f"{what} within {timeout:.0f} s")


class RedisSentinels(ExitStack):
    """A primary, ``replicas`` replicas and ``sentinels`` Sentinels watching them as ``SERVICE``."""

    def __init__(self, workdir: Path, replicas: int = 1, sentinels: int = 3, down_after_ms: int = 1000) -> None:
        super().__init__()
        self.workdir = workdir
        server = redis_server()
        if server is None:  # missing_binaries() tells a caller first
            raise ServiceError("redis-server is missing")
        self.server = server
        self.nodes: dict[int, Process] = {}  # port -> redis-server
        self.sentinel_nodes: dict[int, Process] = {}
        self.replicas = replicas
        self.sentinel_count = sentinels
        self.down_after_ms = down_after_ms

    def start(self) -> RedisSentinels:
        primary = self._redis(None)
        for _ in range(self.replicas):
            self._redis(primary)
        for number in range(self.sentinel_count):
            port = free_port()
            conf = self.workdir / f"sentinel-{port}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\nsentinel resolve-hostnames no\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {self.down_after_ms}\n"
                f"sentinel failover-timeout {SERVICE} 10000\n"
                f"sentinel parallel-syncs {SERVICE} 1\n"
            )
            process = Process(f"sentinel-{number}", [self.server, str(conf), "--sentinel"], conf.with_suffix(".log"))
            self.sentinel_nodes[port] = process.start()
            self.callback(process.stop)
            _wait(lambda p=port: redis_answers(p), 10, f"Sentinel on {port} did not answer")
        _wait(lambda: self.primary() == primary, 10, "the Sentinels did not agree on the primary")
        return self

    def _redis(self, primary: int | None) -> int:
        port = free_port()
        argv = [self.server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.workdir)]
        if primary is not None:
            argv += ["--replicaof", "127.0.0.1", str(primary)]
        process = Process(f"redis-{port}", argv, self.workdir / f"redis-{port}.log").start()
        self.callback(process.stop)
        self.nodes[port] = process
        _wait(lambda: redis_answers(port), 10, f"redis-server on {port} did not answer")
        return port

    @property
    def sentinels(self) -> str:
        """``REDIS_SENTINELS``."""
        return ",".join(f"127.0.0.1:{port}" for port in self.sentinel_nodes)

    def primary(self) -> int | None:
        """The primary's port as the first Sentinel that answers names it."""
        import redis

        for port in self.sentinel_nodes:
            try:
                host, primary = redis.Redis(port=port, socket_timeout=0.5).sentinel_get_master_addr_by_name(SERVICE)
                return int(primary)
            except (redis.RedisError, TypeError):
                continue
        return None

    def kill(self, port: int) -> None:
        """SIGKILL: a crash, not a shutdown."""
        process = self.nodes[port]
        assert process.popen is not None
        process.popen.kill()
        process.popen.wait(5)


class PostgresPair(ExitStack):
    """A PostgreSQL primary and a streaming replica, the replica synchronous (``synchronous_commit = on``)."""

    def __init__(self, workdir: Path) -> None:
        super().__init__()
        self.workdir = workdir
        bindir = postgres_bindir()
        if bindir is None:  # missing_binaries() tells a caller first
            raise ServiceError("PostgreSQL's initdb and pg_ctl are missing")
        self.bindir = bindir
        self.ports: list[int] = []
        self.data: list[Path] = []

    def _run(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
        if os.getuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        done = subprocess.run(
            argv, cwd=self.workdir, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
        )
        if check and done.returncode != 0:
            raise ServiceError(f"{argv[0]} failed:\n{done.stdout}{done.stderr}")
        return done

    def _pg_ctl(self, data: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self._run([str(self.bindir / "pg_ctl"), "-D", str(data), *args], check=check)

    def url(self, port: int, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{port}/{database}"

    def start(self) -> PostgresPair:
        assert self.bindir is not None
        self.workdir.chmod(0o711)
        home = self.workdir / "pg"
        home.mkdir()
        if os.getuid() == 0:
            shutil.chown(home, "postgres")
        primary, replica = home / "primary", home / "replica"
        self._run(
            [str(self.bindir / "initdb"), "-D", str(primary), "-U", "postgres", "-A", "trust"]
            + ["-E", "UTF8", "--locale=C", "--no-sync"]
        )
        port = free_port()
        with open(primary / "postgresql.conf", "a") as conf:
            conf.write(
                f"port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{home}'\n"
                "fsync = off\nfull_page_writes = off\nwal_level = replica\nmax_wal_senders = 4\n"
                "wal_sender_timeout = 5s\n"
            )
        with open(primary / "pg_hba.conf", "a") as hba:
            hba.write("host replication postgres 127.0.0.1/32 trust\n")
        self.callback(self._pg_ctl, primary, "-m", "immediate", "-w", "stop", check=False)
        self._pg_ctl(primary, "-l", str(home / "primary.log"), "-w", "-t", "60", "start")
        self.ports.append(port)
        self.data.append(primary)
        # The replica: a base backup with its primary_conninfo (-R), named so the primary can wait for it.
        self._run(
            [_bin("pg_basebackup") or "pg_basebackup", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
            + ["-D", str(replica), "-R", "-X", "stream", "--no-sync"]
        )
        replica_port = free_port()
        with open(replica / "postgresql.auto.conf", "a") as conf:
            conf.write(f"primary_conninfo = 'host=127.0.0.1 port={port} user=postgres application_name=replica'\n")
        with open(replica / "postgresql.conf", "a") as conf:
            conf.write(f"port = {replica_port}\nhot_standby = on\n")
        self.callback(self._pg_ctl, replica, "-m", "immediate", "-w", "stop", check=False)
        self._pg_ctl(replica, "-l", str(home / "replica.log"), "-w", "-t", "60", "start")
        self.ports.append(replica_port)
        self.data.append(replica)
        # Synchronous replication, set on the primary only (after the base backup, so the replica's
        # copy does not have it): a commit is acknowledged once the replica has it too.
        with psycopg.connect(self.url(port), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = 'replica'")
            conn.execute("ALTER SYSTEM SET synchronous_commit = 'on'")
            conn.execute("SELECT pg_reload_conf()")
        _wait(lambda: self.sync_state() == "sync", 30, "the replica did not become synchronous")
        return self

    def sync_state(self) -> str | None:
        with psycopg.connect(self.url(self.ports[0]), autocommit=True, connect_timeout=3) as conn:
            row = conn.execute(
                "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'replica'"
            ).fetchone()
        return row[0] if row else None

    def kill_primary(self) -> None:
        """The primary crashes: SIGKILL to the postmaster (its backends go with it)."""
        pid = int((self.data[0] / "postmaster.pid").read_text().split()[0])
        os.kill(pid, 9)

    def promote(self) -> None:
        """``pg_ctl promote`` the replica. It never had synchronous_standby_names: as the new primary
        it does not wait for a standby it no longer has."""
        self._pg_ctl(self.data[1], "-w", "-t", "30", "promote")
