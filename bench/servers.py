"""The servers one benchmark run measures, set up from empty databases.

1. a private redis-server (never a shared one: the run flushes nothing of anyone's);
2. one database per ``--tokens`` count: the first migrated by the Procfile's
   release command and seeded through the CLI, the others copied from it
   (``CREATE DATABASE ... TEMPLATE``), each grown with COPY to its count;
3. one authsvc per database, the bare route and the two floors on the first
   database (the round-trip floor and Authlib's twin, ``bench/floors.py``; and
   with ``--before`` an earlier checkout on the first database), each under the
   Procfile's gunicorn command with the same production environment;
4. with ``--ha``, a healthy high-availability cluster (devtools.ha_cluster: a
   Redis primary, a replica and three Sentinels; a PostgreSQL primary and its
   synchronous streaming replica) holding a copy of the first database, and one
   more authsvc reaching it through ``REDIS_SENTINELS`` and a multi-host
   ``DATABASE_URL`` (docs/deployment.md, "High availability").

Everything started is stopped, and every database dropped, when the run's
``ExitStack`` closes. The processes themselves come from ``devtools.services``.
"""

from __future__ import annotations

import argparse
import http.client
import os
import secrets
import subprocess
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import psycopg

from bench import BenchError, domains, floors, peers, report, say, seed, tokens
from devtools.services import Database, Gunicorn, Services, free_port

# Tokens of each database kept for the inspect rows, which pick one at random per request.
INSPECT_SAMPLE = 10_000
# Of the tokens a larger database adds: expired ones, for the purge-under-load row to delete.
EXPIRED_SHARE = 0.5
# Users of the first database and of every larger one, for the SCIM userName filter rows.
SCIM_USERS = (1_000, 100_000)


@dataclass
class Instance:
    """One authsvc under gunicorn, on a database holding ``tokens`` tokens."""

    tokens: int
    db: Database
    server: Gunicorn | None = None
    conn: psycopg.Connection | None = None
    inspect_secrets: list[str] = field(default_factory=list)
    users: int = 0


class Servers:
    """Redis, the databases and the gunicorns of one run, and the seeded records they share.

    ``stack`` stops and drops what ``start`` starts and creates; ``run_dir``
    holds the private servers' data and every log.
    """

    def __init__(self, args: argparse.Namespace, stack: ExitStack, run_dir: Path) -> None:
        self.args = args
        self.stack = stack
        self.run_dir = run_dir
        self.instances: list[Instance] = []
        self.bare: Gunicorn | None = None
        # The floors (bench/README.md, "The floors"): one round trip, and Authlib's documented token endpoint.
        self.roundtrip: Gunicorn | None = None
        self.twin: Gunicorn | None = None
        self.twin_seed: floors.TwinSeed | None = None
        self.twin_cookie = ""
        # An authsvc on the first database that serves inspect only, after the rounds: memory by role.
        self.inspect_only: Gunicorn | None = None
        # Copies of the first database grown to each --domains count (bench/domains.py), when a row of them runs.
        self.domain_sets: list[domains.DomainSet] = []
        # django-oauth-toolkit (bench/peers.py), when a row of it is measured.
        self.peer: peers.Peer | None = None
        self.before: Gunicorn | None = None
        self.ha: Gunicorn | None = None
        self.ha_cookie = ""
        self.ha_roots: list[int] = []  # the --ha cluster's postmasters, for the CPU meter
        self.seed: seed.Seed | None = None
        self.session_cookie = ""
        self.redis_pid: int | None = None

    @property
    def main(self) -> Instance:
        """The instance on the first (smallest) database, which serves every scenario but the larger inspect rows."""
        return self.instances[0]

    def start(self, generator: str) -> None:
        """Set everything up; ``generator`` is only named in the line that says what runs where."""
        args = self.args
        # Stopped last, after the databases are dropped and the gunicorns stopped.
        services = self.stack.enter_context(Services(say=say, workdir=self.run_dir))
        # A private redis-server, never a shared one: the run flushes nothing of anyone's.
        redis_url = services.redis() or os.environ.get("BENCH_REDIS_URL")
        if not redis_url:
            raise BenchError("redis-server is not installed and BENCH_REDIS_URL is not set")
        if services.redis_process:
            self.redis_pid = services.redis_process.pid
        admin = os.environ.get("BENCH_DATABASE_URL") or services.postgres()
        if not admin:
            raise BenchError(
                "no PostgreSQL: nothing answers on 127.0.0.1:5432 and there is no initdb/pg_ctl to start a private "
                "cluster; set BENCH_DATABASE_URL to a server the benchmark may create databases on"
            )
        counts = args.token_counts
        for i, n in enumerate(counts):
            name = args.database if i == 0 else f"{args.database}_{report.tokens_label(n).lower()}"
            self.instances.append(Instance(n, Database(admin, name), users=SCIM_USERS[min(i, 1)]))
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "SECRET_KEY": secrets.token_urlsafe(32),
            "AUTHSVC_ENV": "production",
            "AUTHSVC_COOKIE_SECURE": "false",
            "WEB_CONCURRENCY": str(args.workers),
            "AUTHSVC_INSTANCE_DIR": str(self.run_dir / "instance"),
            # The load comes from one address and a few clients: measure the
            # service, not its brute-force limits (which still count every request).
            "AUTHSVC_SIGNIN_RATE_LIMIT": "100000000/minute",
            "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT": "100000000/minute",
            "AUTHSVC_TOKEN_RATE_LIMIT": "100000000/minute",
            "AUTHSVC_CLIENT_FAILURE_RATE_LIMIT": "100000000/minute",
            "AUTHSVC_CLIENT_FAILURE_CLIENT_RATE_LIMIT": "100000000/minute",
            "AUTHSVC_SCIM_RATE_LIMIT": "100000000/minute",
        }
        env.pop("AUTHSVC_DEFAULT_DOMAIN", None)

        main = self.main
        main.db.create()
        self.stack.callback(main.db.drop)
        say(f"database {main.db.name}, redis {redis_url}; migrating and seeding")
        seed.migrate({**env, "DATABASE_URL": main.db.url})
        with main.db.connect() as conn:
            self.seed = seed.seed_records({**env, "DATABASE_URL": main.db.url}, conn)
            main.inspect_secrets = self.grow(conn, main)
            self.twin_seed = floors.seed_twin(main.db.url, conn)
        self.twin_cookie = floors.twin_session_cookie(env["SECRET_KEY"], self.twin_seed.user_id)
        # The larger databases start as copies of the first: the same records and keys.
        for instance in self.instances[1:]:
            instance.db.create(template=main.db)
            self.stack.callback(instance.db.drop)
            with instance.db.connect() as conn:
                instance.inspect_secrets = self.grow(conn, instance)
        # So are the tenancy rows' databases (before any connection to the first holds it: a template must be idle).
        self.prepare_domain_sets(env)
        for instance in self.instances:
            instance.conn = self.stack.enter_context(instance.db.connect())
            instance.server = Gunicorn(
                f"authsvc-{report.tokens_label(instance.tokens)}",
                free_port(),
                {**env, "DATABASE_URL": instance.db.url},
                self.run_dir / f"authsvc-{instance.db.name}.log",
            )
        self.bare = Gunicorn("bare", free_port(), env, self.run_dir / "bare.log", target="bench.bare_app:app")
        main_env = {**env, "DATABASE_URL": main.db.url}
        log = self.run_dir / "roundtrip.log"
        self.roundtrip = Gunicorn("roundtrip", free_port(), main_env, log, target="bench.roundtrip_app:app")
        self.twin = Gunicorn("twin", free_port(), main_env, self.run_dir / "twin.log", target="bench.twin:create_app()")
        log = self.run_dir / "authsvc-inspect-only.log"
        self.inspect_only = Gunicorn("authsvc-inspect-only", free_port(), main_env, log)
        servers = [i.server for i in self.instances] + [self.bare, self.roundtrip, self.twin, self.inspect_only]
        if args.before:
            self.before = Gunicorn(
                "authsvc-before",
                free_port(),
                {**env, "DATABASE_URL": main.db.url},
                self.run_dir / "authsvc-before.log",
                cwd=args.before.resolve(),
            )
            servers.append(self.before)
        if args.ha:
            self.ha = self.start_ha(env)
            servers.append(self.ha)
        if any(key.startswith("dot_") for key in args.scenarios):
            servers.append(self.prepare_peer(admin, env))
        for server in servers:
            self.stack.callback(server.stop)
            server.start(args.workers)
        self.start_domain_sets()
        say(
            ", ".join(f"{i.server.name} on :{i.server.port}" for i in self.instances)
            + f", bare route on :{self.bare.port}, round-trip floor on :{self.roundtrip.port}, Authlib twin on "
            f":{self.twin.port}; {args.workers} workers each; generator {generator}"
        )
        self.session_cookie = self.sign_in()
        if self.ha is not None:
            self.ha_cookie = self.sign_in(self.ha.port)

    def prepare_domain_sets(self, env: dict[str, str]) -> None:
        """The tenancy rows' databases: copies of the first grown to each ``--domains`` count (not yet served)."""
        if not any(key.startswith("domains_") for key in self.args.scenarios):
            return
        for count in self.args.domain_counts:
            name = f"{self.args.database}_{report.tokens_label(count).lower()}_domains"
            domain_set = domains.prepare(self.main.db, name, count, env, self.run_dir / f"authsvc-{name}.log")
            self.stack.callback(domain_set.db.drop)
            self.domain_sets.append(domain_set)

    def start_domain_sets(self) -> None:
        """Serve each domain set, timing its start on its own: a worker's start at 10,000 domains against 10."""
        for domain_set in self.domain_sets:
            self.stack.callback(domain_set.server.stop)
            began = time.monotonic()
            domain_set.server.start(self.args.workers)
            domain_set.start_s = time.monotonic() - began
            domain_set.cookie = self.sign_in(domain_set.server.port)
            domain_set.admin_cookie = self.sign_in(domain_set.server.port, seed.SYSTEM_ADMIN_EMAIL)

    def prepare_peer(self, admin: str, env: dict[str, str]) -> Gunicorn:
        """django-oauth-toolkit's database, records and gunicorn (not yet started)."""
        self.peer = peers.Peer(admin, f"{self.args.database}_dot", env, self.run_dir)
        self.stack.callback(self.peer.db.drop)
        say(f"django-oauth-toolkit: database {self.peer.db.name}; migrating and seeding")
        # Every load of the refresh row takes fresh tokens: the warm-up and each round.
        refresh = peers.refresh_needed(self.args.rounds + 1, self.args.connections)
        return self.peer.prepare(INSPECT_SAMPLE, refresh)

    def grow(self, conn: psycopg.Connection, instance: Instance) -> list[str]:
        """Add tokens until ``instance``'s database holds its count; returns the inspect rows' sample.

        The first database gets live tokens by COPY; a larger one (a copy of it) gets the rest from
        PostgreSQL itself (``python -m bench.tokens``), half of them expired, for the purge row.
        """
        have = seed.token_count(conn)
        began = time.monotonic()
        if instance is self.main:
            kept = seed.insert_tokens(conn, self.seed, instance.tokens - have, INSPECT_SAMPLE)
            seed.vacuum_analyze(conn)
        else:
            batch = tokens.grow(
                conn,
                instance.tokens,
                EXPIRED_SHARE,
                self.seed.application_id,
                self.seed.service_user_id,
                connect=instance.db.connect,
            )
            kept = batch.sample(INSPECT_SAMPLE)
        seed.insert_users(conn, instance.users)
        say(
            f"{instance.db.name}: {seed.token_count(conn):,} tokens ({time.monotonic() - began:.1f} s to add "
            f"{max(0, instance.tokens - have):,} and VACUUM ANALYZE)"
        )
        return kept

    def start_ha(self, env: dict[str, str]) -> Gunicorn:
        """The ``--ha`` cluster, a copy of the first database on its primary, and the authsvc (not started) over it."""
        from devtools.ha_cluster import SERVICE, PostgresPair, RedisSentinels, missing_binaries

        why = missing_binaries()
        if why:
            raise BenchError(f"--ha needs its clusters: {why}")
        workdir = self.run_dir / "ha"
        workdir.mkdir()
        self.run_dir.chmod(0o711)  # as root, PostgreSQL runs as ``postgres``, which must reach its directory
        redis_cluster = self.stack.enter_context(RedisSentinels(workdir)).start()
        pg = self.stack.enter_context(PostgresPair(workdir)).start()
        self.ha_roots = [int((data / "postmaster.pid").read_text().split()[0]) for data in pg.data]
        # The same records, keys and tokens as the first database, so every row's load fits both.
        dump = subprocess.run(
            [_pg_tool("pg_dump"), "--no-owner", "--no-privileges", self.main.db.url],
            capture_output=True,
            check=True,
            timeout=300,
        ).stdout
        subprocess.run(
            [_pg_tool("psql"), "-q", "-v", "ON_ERROR_STOP=1", pg.url(pg.ports[0])],
            input=dump,
            capture_output=True,
            check=True,
            timeout=300,
        )
        hosts = ",".join(f"127.0.0.1:{port}" for port in pg.ports)
        ha_env = {k: v for k, v in env.items() if k != "REDIS_URL"}
        ha_env |= {
            "REDIS_SENTINELS": redis_cluster.sentinels,
            "REDIS_SENTINEL_SERVICE": SERVICE,
            "DATABASE_URL": f"postgresql://postgres@{hosts}/postgres?target_session_attrs=read-write",
        }
        say(
            f"--ha: Redis primary :{redis_cluster.primary()} with Sentinels {redis_cluster.sentinels}; "
            f"PostgreSQL {hosts} ({pg.sync_state()} replica)"
        )
        return Gunicorn("authsvc-ha", free_port(), ha_env, self.run_dir / "authsvc-ha.log")

    def sign_in(self, port: int | None = None, email: str = seed.PERSON_EMAIL) -> str:
        """A seeded user's session cookie (its value) on ``port``: the person on the first database's by default."""
        conn = http.client.HTTPConnection("127.0.0.1", port or self.main.server.port, timeout=30)
        query = f"email={quote(email)}&password={quote(seed.PASSWORD)}"
        conn.request("POST", f"/auth/signin?{query}")
        response = conn.getresponse()
        response.read()
        conn.close()
        cookie = response.headers.get("Set-Cookie", "")
        if response.status != 202 or not cookie.startswith("user="):
            raise BenchError(f"sign-in failed: {response.status}")
        return cookie.split(";", 1)[0].removeprefix("user=")


def _pg_tool(name: str) -> str:
    """pg_dump or psql, from PATH or the PostgreSQL that devtools starts."""
    from devtools.services import postgres_bindir

    bindir = postgres_bindir()
    if bindir is not None and (bindir / name).exists():
        return str(bindir / name)
    return name
