"""``python -m bench``: the whole run, from empty databases to the table.

1. a private redis-server; one database per token count (the first seeded
   through the Procfile's release command and the CLI, the others copied from
   it and grown with COPY);
2. one authsvc per database and the bare route, each under the Procfile's
   gunicorn command with the same settings, production environment;
3. the scenarios, each warmed up, then measured in ``--rounds`` interleaved
   slices (so that a burst of other work on the machine hits all of them alike);
   bcrypt's raw rate is one of them;
4. a revocation check on every authsvc, memory per worker, the table, JSON.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import http.client
import json
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import psycopg

from bench import BenchError, baselines, profiling, report, say, seed
from bench.load import Load, Result
from bench.noise import CpuMeter, CpuUse, wait_quiet
from bench.pyload import PythonLoad
from bench.wrk import Wrk
from bench.wrk import find as find_wrk
from devtools.services import REPO, Database, Gunicorn, ServiceError, Services, free_port

RESULTS = Path(__file__).resolve().parent / "results"
INSPECT_PATH = "/api/engine/v2/api_keys/inspect"
INSPECT_SAMPLE = 10_000
SCENARIOS = (
    "bare",
    "inspect_bearer",
    "inspect_api_key",
    "code_flow",
    "code_flow_openid",
    "refresh",
    "device_poll",
    "client_credentials",
    "password_grant",
    "signin",
    "bcrypt",
)
# A few requests a second each: they need longer slices for a steady figure.
BCRYPT_BOUND = {"bcrypt", "password_grant", "signin"}
PROFILE_DEFAULT = (
    "inspect_bearer,inspect_api_key,code_flow,code_flow_openid,refresh,client_credentials,password_grant,signin"
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=10.0, help="seconds of measured load per scenario (10)")
    p.add_argument(
        "--bcrypt-duration",
        type=float,
        default=30.0,
        help="seconds of measured load for the bcrypt-bound scenarios (30): at 8 requests a second, "
        "10 s gave 0.86-0.98 of bcrypt's rate for the same code",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="slices each scenario's duration is cut into, interleaved with the others (3)",
    )
    p.add_argument("--warmup", type=float, default=2.0, help="seconds of unmeasured load before each scenario (2)")
    p.add_argument(
        "--connections",
        type=int,
        default=8,
        help="concurrent connections for the fast scenarios (8); bcrypt-bound ones use 2 per worker",
    )
    p.add_argument("--workers", type=int, default=2, help="gunicorn WEB_CONCURRENCY (2)")
    p.add_argument(
        "--tokens",
        default="10000,1000000",
        help="token counts for the inspect rows; the first serves every other scenario (10000,1000000)",
    )
    p.add_argument(
        "--generator",
        choices=("auto", "wrk", "python"),
        default="auto",
        help="load generator: wrk when installed (auto), or the Python one",
    )
    p.add_argument("--quick", action="store_true", help="smoke run: 1000,20000 tokens, 3 s per scenario, 1 round")
    p.add_argument(
        "--quiet-below",
        type=float,
        default=0.25,
        metavar="CORES",
        help="before each slice, wait until other processes use fewer cores than this (0.25)",
    )
    p.add_argument(
        "--max-wait",
        type=float,
        default=120.0,
        help="seconds to wait for that in all, at most 15 per slice (120); 0 never waits",
    )
    p.add_argument(
        "--priority",
        type=int,
        default=0,
        metavar="N",
        help="run the benchmark's processes and its databases' PostgreSQL backends N nice levels above normal "
        "(needs root; 0, the default, leaves priorities alone); for a busy shared machine, see bench/README.md",
    )
    p.add_argument(
        "--only",
        default=None,
        metavar="KEYS",
        help="measure only these scenarios, comma-separated, of: " + ",".join(SCENARIOS),
    )
    p.add_argument(
        "--database",
        default="authsvc_bench",
        help="name of the database to create (and drop); larger token counts get a suffix (authsvc_bench)",
    )
    p.add_argument(
        "--serve",
        action="store_true",
        help="set up as for a run, print how to reach it, and wait for Ctrl-C (for profiling by hand)",
    )
    p.add_argument(
        "--profile",
        nargs="?",
        const=PROFILE_DEFAULT,
        default=None,
        metavar="KEYS",
        help=f"after the table, run these again under py-spy (default {PROFILE_DEFAULT})",
    )
    p.add_argument(
        "--before",
        type=Path,
        default=None,
        metavar="DIR",
        help="also serve an earlier checkout of authsvc (e.g. `git archive REV | tar -x -C DIR`) on the first "
        "database, and measure its inspect rows in the same run, for a before/after comparison",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.duration, args.warmup, args.rounds = min(args.duration, 3.0), min(args.warmup, 1.0), 1
        args.bcrypt_duration = min(args.bcrypt_duration, 3.0)
        if args.tokens == p.get_default("tokens"):
            args.tokens = "1000,20000"
    args.token_counts = sorted({int(x.replace("_", "")) for x in args.tokens.split(",") if x.strip()})
    if not args.token_counts:
        p.error("--tokens needs at least one count")
    args.rounds = max(1, args.rounds)
    args.scenarios = [k for k in SCENARIOS if args.only is None or k in args.only.split(",")]
    return args


def _commit() -> str:
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or os.environ.get("BENCH_COMMIT", "unknown")
    return commit + ("-dirty" if git("status", "--porcelain", "--", "authsvc", "config", "app.py") else "")


def rss_mb(pid: int) -> float | None:
    """Resident memory of ``pid`` in MB (MiB), from /proc/PID/status."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def worker_memory(server: Gunicorn) -> list[dict]:
    return [{"pid": pid, "rss_mb": rss_mb(pid)} for pid in server.workers()]


@dataclass
class Instance:
    """One authsvc under gunicorn, on a database holding ``tokens`` tokens."""

    tokens: int
    db: Database
    server: Gunicorn | None = None
    conn: psycopg.Connection | None = None
    inspect_secrets: list[str] = field(default_factory=list)


class Run:
    def __init__(self, args: argparse.Namespace, stack: ExitStack):
        self.args = args
        self.stack = stack
        self.run_dir = Path(tempfile.mkdtemp(prefix="authsvc-bench-"))
        self.rounds: dict[str, list[Result]] = {}
        self.cpu: dict[str, list[CpuUse]] = {}
        self.generator: Wrk | PythonLoad = self._generator()
        self.instances: list[Instance] = []
        self.bare: Gunicorn | None = None
        self.before: Gunicorn | None = None
        self.seed: seed.Seed | None = None
        self.session_cookie = ""
        self.failed = False
        self.waited = 0.0
        self.redis_pid: int | None = None

    @property
    def main(self) -> Instance:
        return self.instances[0]

    # ---------------------------------------------------------------- set-up

    def _generator(self) -> Wrk | PythonLoad:
        if self.args.generator != "python":
            binary = find_wrk()
            if binary:
                return Wrk(binary, self.run_dir)
            if self.args.generator == "wrk":
                raise BenchError("wrk is not installed (apt-get install wrk)")
            say("wrk is not available: using the Python load generator")
        return PythonLoad()

    def start(self) -> None:
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
            self.instances.append(Instance(n, Database(admin, name)))
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
        # The larger databases start as copies of the first: the same records and keys.
        for instance in self.instances[1:]:
            instance.db.create(template=main.db)
            self.stack.callback(instance.db.drop)
            with instance.db.connect() as conn:
                instance.inspect_secrets = self.grow(conn, instance)
        for instance in self.instances:
            instance.conn = self.stack.enter_context(instance.db.connect())
            instance.server = Gunicorn(
                f"authsvc-{report.tokens_label(instance.tokens)}",
                free_port(),
                {**env, "DATABASE_URL": instance.db.url},
                self.run_dir / f"authsvc-{instance.db.name}.log",
            )
        self.bare = Gunicorn("bare", free_port(), env, self.run_dir / "bare.log", target="bench.bare_app:app")
        servers = [i.server for i in self.instances] + [self.bare]
        if args.before:
            self.before = Gunicorn(
                "authsvc-before",
                free_port(),
                {**env, "DATABASE_URL": main.db.url},
                self.run_dir / "authsvc-before.log",
                cwd=args.before.resolve(),
            )
            servers.append(self.before)
        for server in servers:
            self.stack.callback(server.stop)
            server.start(args.workers)
        say(
            ", ".join(f"{i.server.name} on :{i.server.port}" for i in self.instances)
            + f", bare route on :{self.bare.port}; {args.workers} workers each; generator {self.generator.name}"
        )
        self.session_cookie = self.sign_in()
        self.meter = CpuMeter(self.main.conn, [i.db.name for i in self.instances])

    def grow(self, conn: psycopg.Connection, instance: Instance) -> list[str]:
        have = seed.token_count(conn)
        began = time.monotonic()
        kept = seed.insert_tokens(conn, self.seed, instance.tokens - have, INSPECT_SAMPLE)
        seed.vacuum_analyze(conn)
        say(
            f"{instance.db.name}: {seed.token_count(conn):,} tokens ({time.monotonic() - began:.1f} s to COPY "
            f"{max(0, instance.tokens - have):,} and VACUUM ANALYZE)"
        )
        return kept

    def sign_in(self) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", self.main.server.port, timeout=30)
        query = f"email={quote(seed.PERSON_EMAIL)}&password={quote(seed.PASSWORD)}"
        conn.request("POST", f"/auth/signin?{query}")
        response = conn.getresponse()
        response.read()
        conn.close()
        cookie = response.headers.get("Set-Cookie", "")
        if response.status != 202 or not cookie.startswith("user="):
            raise BenchError(f"sign-in failed: {response.status}")
        return cookie.split(";", 1)[0].removeprefix("user=")

    def device_code(self) -> str:
        """A fresh device code of the seeded --device application (it lasts AUTHSVC_DEVICE_CODE_TTL, 600 s)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.main.server.port, timeout=30)
        body = urlencode({"client_id": self.seed.device_client_id})
        conn.request(
            "POST",
            "/auth/oauth/device_authorization",
            body=body,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        response = conn.getresponse()
        data = response.read()
        conn.close()
        if response.status != 200:
            raise BenchError(f"device authorisation failed: {response.status}")
        return json.loads(data)["device_code"]

    # ---------------------------------------------------------------- loads

    def keys(self) -> list[str]:
        """Measured keys in order; inspect_bearer once per token count."""
        out = []
        for key in self.args.scenarios:
            if key == "inspect_bearer":
                out += [f"inspect_bearer_{i.tokens}" for i in self.instances]
            else:
                out.append(key)
            if self.before is not None and key in ("inspect_bearer", "inspect_api_key"):
                out.append(f"{key}_before")
        return out

    def load(self, key: str) -> Load:
        s = self.seed
        port = self.main.server.port
        fast = self.args.connections
        slow = 2 * self.args.workers
        if key == "bare":
            return Load(key, self.bare.port, connections=fast)
        if key.endswith("_before"):
            # The same load as the row it shadows, sent to the earlier checkout.
            shadowed = self.load(f"inspect_bearer_{self.main.tokens}" if key.startswith("inspect_bearer") else key[:-7])
            shadowed.name, shadowed.port = key, self.before.port
            return shadowed
        if key.startswith("inspect_bearer"):
            instance = next((i for i in self.instances if key == f"inspect_bearer_{i.tokens}"), self.main)
            return Load(
                key,
                instance.server.port,
                "bearer",
                path=INSPECT_PATH,
                secrets=instance.inspect_secrets,
                connections=fast,
            )
        if key == "inspect_api_key":
            return Load(key, port, path=INSPECT_PATH, headers={"X-API-Key": s.api_key}, connections=fast)
        if key in ("code_flow", "code_flow_openid"):
            cookie = {"Cookie": f"user={self.session_cookie}"}
            return Load(
                key,
                port,
                "code_flow",
                path=s.authorize_path(openid=key == "code_flow_openid"),
                headers=cookie,
                ok=(200, 302),
                connections=fast,
                exchange_prefix=s.exchange_path_prefix(),
            )
        if key == "refresh":
            # Every refresh token is good once: each run gets fresh ones.
            pool = seed.insert_tokens(self.main.conn, s, 50 * fast, 50 * fast, refresh=True)
            return Load(key, port, "refresh", connections=fast, secrets=pool, client_id=s.client_id)
        if key == "device_poll":
            # A device polling while nobody has answered: every poll after the first is too soon,
            # so the answers are 400 slow_down (the same reads, and one write, as authorization_pending).
            body = urlencode(
                {
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                    "device_code": self.device_code(),
                    "client_id": s.device_client_id,
                }
            )
            return Load(
                key,
                port,
                method="POST",
                path="/auth/oauth/token",
                body=body,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                ok=(400,),
                connections=fast,
            )
        if key == "client_credentials":
            # HTTP Basic: the secret is checked as a SHA-256 digest compare, not bcrypt.
            basic = base64.b64encode(f"{s.machine_client_id}:{s.machine_client_secret}".encode()).decode()
            return Load(
                key,
                port,
                method="POST",
                path="/auth/oauth/token",
                body="grant_type=client_credentials",
                headers={"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"},
                connections=fast,
            )
        if key == "password_grant":
            body = json.dumps(
                {
                    "grant_type": "password",
                    "username": seed.SERVICE_EMAIL,
                    "password": seed.PASSWORD,
                    "client_id": s.client_id,
                }
            )
            return Load(
                key,
                port,
                method="POST",
                path="/auth/oauth/token",
                body=body,
                headers={"Content-Type": "application/json"},
                connections=slow,
                timeout=30,
            )
        if key == "signin":
            path = f"/auth/signin?email={quote(seed.PERSON_EMAIL)}&password={quote(seed.PASSWORD)}"
            return Load(key, port, method="POST", path=path, ok=(202,), connections=slow, timeout=30)
        raise KeyError(key)

    def raise_priority(self) -> None:
        """Give this process (so everything it starts from now) and the backends of its databases priority."""
        if self.args.priority <= 0:
            return
        niceness = -self.args.priority
        pids = {os.getpid()} | self.meter.backends()
        for i in self.instances:
            pids |= {i.server.process.pid, *i.server.workers()}
        pids |= {self.bare.process.pid, *self.bare.workers()}
        if self.redis_pid:
            pids.add(self.redis_pid)
        for pid in pids:
            try:
                os.setpriority(os.PRIO_PROCESS, pid, niceness)
            except OSError as exc:
                raise BenchError(f"--priority needs root: {exc}") from None

    def run_once(self, key: str, duration: float) -> Result:
        if key == "bcrypt":
            return baselines.bcrypt_rate(seed.PASSWORD, self.seed.password_hash, self.args.workers, duration)
        return self.generator.run(self.load(key), duration)

    def measure_all(self) -> None:
        args = self.args
        keys = self.keys()
        slice_ = max(1.0, round(args.duration / args.rounds))
        bcrypt_slice = max(1.0, round(args.bcrypt_duration / args.rounds))
        for r in range(args.rounds):
            say(f"round {r + 1} of {args.rounds}: {slice_:.0f} s per scenario, {bcrypt_slice:.0f} s if bcrypt-bound")
            for key in keys:
                if r == 0 and args.warmup > 0 and key != "bcrypt":
                    self.run_once(key, args.warmup)
                self.raise_priority()
                budget = min(15.0, args.max_wait - self.waited)
                if budget > 0:
                    waited, _ = wait_quiet(self.meter, args.quiet_below, budget)
                    self.waited += waited
                self.meter.start()
                result = self.run_once(key, bcrypt_slice if key in BCRYPT_BOUND else slice_)
                use = self.meter.stop()
                self.rounds.setdefault(key, []).append(result)
                self.cpu.setdefault(key, []).append(use)
                failed = result.failed
                note = f"  {failed} FAILED {result.statuses}" if failed else ""
                cost = f"{1000 * use.server_cpu_s / result.ok:6.2f} CPU ms/req" if result.ok and key != "bcrypt" else ""
                say(
                    f"  {key:<24} {result.rps:9.1f} req/s  p50 {result.p50_ms:7.1f} ms  p99 {result.p99_ms:7.1f} ms"
                    f"  {cost}  others used {use.others_cores:.2f} cores{note}"
                )
                if result.ok == 0 or failed > 0.01 * max(1, result.requests):
                    self.failed = True

    # ---------------------------------------------------------------- checks

    def _burst(self, port: int, headers: dict[str, str], count: int, concurrency: int) -> dict[str, int]:
        def one(_: int) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request("GET", INSPECT_PATH, headers=headers)
                response = conn.getresponse()
                response.read()
                return response.status
            finally:
                conn.close()

        counts: dict[str, int] = {}
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            for status in pool.map(one, range(count)):
                counts[str(status)] = counts.get(str(status), 0) + 1
        return counts

    def check_revocation(self, instance: Instance) -> dict[str, Any]:
        """Warm every worker with a token and a key, revoke both, ask again at once: every answer must be 401."""
        port = instance.server.port
        workers = instance.server.workers()
        count, concurrency = 50 * len(workers), 4 * len(workers)
        token, key = instance.inspect_secrets[0], self.seed.api_key
        bearer, api_key = {"Authorization": f"Bearer {token}"}, {"X-API-Key": key}
        before = {
            "token": self._burst(port, bearer, count, concurrency),
            "api_key": self._burst(port, api_key, count, concurrency),
        }
        switches = {pid: _ctxt_switches(pid) for pid in workers}
        # Through the API if the service has RFC 7009 revocation; else as an operator would, in SQL.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request(
            "POST",
            "/auth/oauth/revoke",
            body=f"token={token}&client_id={self.seed.client_id}",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        response = conn.getresponse()
        response.read()
        conn.close()
        if response.status == 200:
            token_method = "POST /auth/oauth/revoke"
        else:
            token_method = "SQL"
            instance.conn.execute(
                "UPDATE token SET revoked_at = %s WHERE access_token_digest = %s",
                (int(time.time()), seed.digest(token)),
            )
        instance.conn.execute(
            "UPDATE api_key SET revoked_at = %s WHERE id = %s", (int(time.time()), self.seed.api_key_id)
        )
        after = {
            "token": self._burst(port, bearer, count, concurrency),
            "api_key": self._burst(port, api_key, count, concurrency),
        }
        served = [_ctxt_switches(pid) - n for pid, n in switches.items()]
        immediate = all(set(a) == {"401"} for a in after.values()) and all(set(b) == {"200"} for b in before.values())
        summary = (
            f"{instance.server.name}: {'immediate' if immediate else 'NOT IMMEDIATE'}; after revoking (token by "
            f"{token_method}, API key by SQL) {after['token'].get('401', 0)}/{count} token and "
            f"{after['api_key'].get('401', 0)}/{count} key requests on {concurrency} connections got 401 "
            f"(before: {before['token'].get('200', 0)} and {before['api_key'].get('200', 0)} got 200); "
            f"context switches of each worker meanwhile: {', '.join(map(str, served))}"
        )
        return {
            "immediate": immediate,
            "summary": summary,
            "before": before,
            "after": after,
            "token_revoked_by": token_method,
            "worker_context_switches": served,
        }

    # ---------------------------------------------------------------- the run

    def execute(self) -> int:
        args = self.args
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.start()
        if args.serve:
            return self.serve()
        self.measure_all()
        checks = [self.check_revocation(i) for i in self.instances]
        for check in checks:
            say(f"revocation: {check['summary']}")
        revocation = {
            "immediate": all(c["immediate"] for c in checks),
            "summary": " | ".join(c["summary"] for c in checks),
            "instances": checks,
        }
        memory = {f"{i.server.name} service": worker_memory(i.server) for i in self.instances}
        memory["bare route"] = worker_memory(self.bare)
        settings = {
            "started": started,
            "commit": _commit(),
            "generator": self.generator.name,
            "workers": args.workers,
            "connections": args.connections,
            "bcrypt_connections": 2 * args.workers,
            "duration": args.duration,
            "bcrypt_duration": args.bcrypt_duration,
            "rounds": args.rounds,
            "warmup": args.warmup,
            "tokens": args.token_counts,
            "bcrypt_rounds": self.seed.bcrypt_rounds,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_at_end": os.getloadavg(),
            "waited_for_quiet_s": round(self.waited, 1),
            "priority": args.priority,
        }
        result = report.build(self.rounds, self.cpu, args.token_counts, memory, revocation, settings)
        path = report.write(result, RESULTS)
        print()
        print(report.render(result))
        print(f"\n(JSON: {path.relative_to(REPO)})")
        if args.profile:
            self.profile(args.profile.split(","))
        return 1 if self.failed else 0

    def serve(self) -> int:
        """Leave everything running until interrupted; write what a client needs to serve.json."""
        info = {
            "instances": {
                str(i.tokens): {
                    "port": i.server.port,
                    "master_pid": i.server.process.pid,
                    "workers": i.server.workers(),
                    "database": i.db.url,
                }
                for i in self.instances
            },
            "bare_port": self.bare.port,
            "client_id": self.seed.client_id,
            "api_key": self.seed.api_key,
            "session_cookie": self.session_cookie,
            "username": seed.SERVICE_EMAIL,
            "password": seed.PASSWORD,
            "redirect_uri": seed.REDIRECT_URI,
            "inspect_tokens": {str(i.tokens): i.inspect_secrets[:5] for i in self.instances},
            "authorize_path": self.seed.authorize_path(),
            "exchange_path_prefix": self.seed.exchange_path_prefix(),
        }
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"serve-{self.args.database}.json"
        path.write_text(json.dumps(info, indent=2))
        say(f"serving; details in {path.relative_to(REPO)}; Ctrl-C (or SIGTERM) stops it")
        while all(i.server.process.alive() for i in self.instances):
            time.sleep(1)
        return 1

    def profile(self, keys: list[str]) -> None:
        for key in keys:
            key = f"inspect_bearer_{self.main.tokens}" if key == "inspect_bearer" else key
            out = RESULTS / f"profile-{key}.txt"
            load = self.load(key)
            pid = next((i.server.process.pid for i in self.instances if i.server.port == load.port), None)
            spy = profiling.start(pid, out, self.args.duration)
            time.sleep(1.0)  # let py-spy attach before the load starts
            self.generator.run(load, max(1.0, self.args.duration - 2))
            _, err = spy.communicate(timeout=self.args.duration + 60)
            if not out.exists():
                say(f"py-spy wrote nothing for {key}: {err.decode(errors='replace').strip()}")
                continue
            summary = profiling.summarise(out)
            (RESULTS / f"profile-{key}.summary.txt").write_text(summary)
            print(f"\n=== profile: {key} (bench/results/profile-{key}.txt) ===\n{summary}")

    def cleanup_dir(self) -> None:
        if self.failed:
            say(f"logs kept in {self.run_dir}")
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)


def _ctxt_switches(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    run: Run | None = None
    with ExitStack() as stack:
        try:
            run = Run(args, stack)
            stack.callback(run.cleanup_dir)
            return run.execute()
        except ServiceError as exc:
            print(f"bench: {exc}", file=sys.stderr)
            if run:
                run.failed = True
            return 2
        except KeyboardInterrupt:
            if args.serve:
                return 0
            print("bench: interrupted; stopping what it started", file=sys.stderr)
            if run:
                run.failed = True
            return 130
        finally:
            say("stopping servers, dropping the databases")
