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

This module reads the options and runs those steps in order: 1 and 2 are
``bench/servers.py``, 3 ``bench/scenarios.py`` (what each row sends) and
``bench/measure.py`` (the rounds), 4 ``bench/checks.py`` and ``bench/report.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

from bench import checks, profiling, report, say, seed, stress, targets
from bench.measure import Measurement, choose_generator
from bench.scenarios import SCENARIOS, Scenarios
from bench.servers import Servers
from devtools.services import REPO, ServiceError

RESULTS = Path(__file__).resolve().parent / "results"
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
        default="10000,10000000",
        help="token counts for the inspect rows; the first serves every other scenario, the last the purge row "
        '(10000,10000000: about 5 GB and 10-15 minutes to seed; bench/README.md, "Ten million tokens")',
    )
    p.add_argument(
        "--generator",
        choices=("auto", "wrk", "python"),
        default="auto",
        help="load generator: wrk when installed (auto), or the Python one",
    )
    p.add_argument(
        "--quick", action="store_true", help="smoke run: 1000,20000 tokens, 10,1000 domains, 3 s per scenario, 1 round"
    )
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
        "--domains",
        default="10,10000",
        help="domain counts for the tenancy rows, each a copy of the first database grown with bulk INSERTs "
        "(python -m bench.domains); the first is the baseline (10,10000)",
    )
    p.add_argument(
        "--no-peer",
        action="store_true",
        help="leave out django-oauth-toolkit's rows (its virtual environment is made with pip on the first run)",
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
        "database, and measure its inspect, grant and sign-in rows in the same run, for a before/after comparison",
    )
    p.add_argument(
        "--ha",
        action="store_true",
        help="also start a healthy Redis Sentinel + PostgreSQL primary/replica cluster holding a copy of the first "
        "database, and measure the inspect and code-flow rows on an authsvc over it (REDIS_SENTINELS, a multi-host "
        "DATABASE_URL) in the same run",
    )
    p.add_argument(
        "--overload",
        action="store_true",
        help="also the overload rows: inspect and the token endpoint at twice the rate they sustain (on in a run "
        'without --only; bench/README.md, "Overload")',
    )
    p.add_argument(
        "--purge",
        action="store_true",
        help="also the purge row: inspect's p99 on the database with the most tokens while `tokens purge` deletes "
        "its expired half (on in a run without --only)",
    )
    p.add_argument(
        "--check",
        nargs="?",
        type=Path,
        const=targets.LATEST,
        default=None,
        metavar="JSON",
        help="measure nothing: read the latest run's results (or JSON) and exit 1 if any target is missed "
        "(inspect against the round-trip floor, every grant against its Authlib twin, the ID token, memory, "
        "10M tokens, the purge, overload, revocation); see bench/README.md",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.duration, args.warmup, args.rounds = min(args.duration, 3.0), min(args.warmup, 1.0), 1
        args.bcrypt_duration = min(args.bcrypt_duration, 3.0)
        if args.tokens == p.get_default("tokens"):
            args.tokens = "1000,20000"
    if args.quick and args.domains == p.get_default("domains"):
        args.domains = "10,1000"
    args.domain_counts = sorted({int(x.replace("_", "")) for x in args.domains.split(",") if x.strip()})
    args.token_counts = sorted({int(x.replace("_", "")) for x in args.tokens.split(",") if x.strip()})
    if not args.token_counts:
        p.error("--tokens needs at least one count")
    args.rounds = max(1, args.rounds)
    if args.only is None:
        args.overload = args.purge = True
    args.scenarios = [k for k in SCENARIOS if args.only is None or k in args.only.split(",")]
    if args.no_peer:
        args.scenarios = [k for k in args.scenarios if not k.startswith("dot_")]
    if not args.domain_counts:
        args.scenarios = [k for k in args.scenarios if not k.startswith("domains_")]
    return args


def _commit() -> str:
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or os.environ.get("BENCH_COMMIT", "unknown")
    return commit + ("-dirty" if git("status", "--porcelain", "--", "authsvc", "config", "app.py") else "")


class Run:
    """One ``python -m bench``: the servers, the measured rounds, the checks, the table (or ``--serve``)."""

    def __init__(self, args: argparse.Namespace, stack: ExitStack) -> None:
        self.args = args
        self.stack = stack
        self.run_dir = Path(tempfile.mkdtemp(prefix="authsvc-bench-"))
        self.generator = choose_generator(args, self.run_dir)
        self.servers = Servers(args, stack, self.run_dir)
        self.scenarios = Scenarios(args, self.servers)
        self.failed = False

    def execute(self) -> int:
        """The whole run (or ``--serve``); returns the exit status."""
        args = self.args
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.servers.start(self.generator.name)
        measurement = Measurement(args, self.servers, self.scenarios, self.generator)
        if args.serve:
            return self.serve()
        measurement.measure_all()
        measurement.serve_inspect_only()
        self.failed = measurement.failed
        servers = self.servers
        revocations = [checks.check_revocation(i, servers.seed) for i in servers.instances]
        for check in revocations:
            say(f"revocation: {check['summary']}")
        revocation = {
            "immediate": all(c["immediate"] for c in revocations),
            "summary": " | ".join(c["summary"] for c in revocations),
            "instances": revocations,
        }
        memory = {f"{i.server.name} service": checks.worker_memory(i.server) for i in servers.instances}
        memory["bare route"] = checks.worker_memory(servers.bare)
        memory["round-trip floor"] = checks.worker_memory(servers.roundtrip)
        memory["Authlib twin"] = checks.worker_memory(servers.twin)
        if servers.peer is not None:
            memory["django-oauth-toolkit"] = checks.worker_memory(servers.peer.server)
        # Every row of the first database's authsvc was measured (the peer's and the tenancy rows run elsewhere).
        every_row = all(k in args.scenarios for k in SCENARIOS if not k.startswith(("dot_", "domains_")))
        memory_roles = checks.memory_by_role(servers, every_row)
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
            "bcrypt_rounds": servers.seed.bcrypt_rounds,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_at_end": os.getloadavg(),
            "waited_for_quiet_s": round(measurement.waited, 1),
            "priority": args.priority,
        }
        domain_sets = {
            str(d.count): {"start_s": round(d.start_s, 3), "workers": checks.worker_memory(d.server)}
            for d in servers.domain_sets
        }
        rounds, cpu = measurement.rounds, measurement.cpu
        extra = self.stress()
        result = report.build(
            rounds, cpu, args.token_counts, memory, memory_roles, revocation, settings, domain_sets, extra
        )
        path = report.write(result, RESULTS)
        print()
        print(report.render(result))
        print(f"\n(JSON: {path.relative_to(REPO)})")
        if args.profile:
            self.profile(args.profile.split(","))
        return 1 if self.failed else 0

    def stress(self) -> dict:
        """The purge under load and the overload rows (bench/stress.py), after everything else was measured."""
        args, servers, out = self.args, self.servers, {}
        if args.purge:
            largest = servers.instances[-1]
            env = {**largest.server.env, "DATABASE_URL": largest.db.url}
            say(f"purge under load, on {largest.db.name}")
            # The first token of each sample was revoked by the revocation check.
            out["purge_under_load"] = stress.purge_under_load(
                largest.server.port, largest.inspect_secrets[1:], env, args.duration
            )
        if args.overload:
            queue_timeout = float(servers.main.server.env.get("AUTHSVC_QUEUE_TIMEOUT") or 1.0)
            inspect = self.scenarios.load(f"inspect_bearer_{servers.main.tokens}")
            inspect.secrets = inspect.secrets[1:]  # the first was revoked by the revocation check
            token = stress.token_load(servers.main.server.port, servers.seed)
            say("overload")
            out["overload"] = [
                stress.overload(name, load, args.duration, args.connections, queue_timeout)
                for name, load in (("inspect", inspect), ("token", token))
            ]
        return out

    def serve(self) -> int:
        """Leave everything running until interrupted; write what a client needs to serve.json."""
        servers, records = self.servers, self.servers.seed
        info = {
            "instances": {
                str(i.tokens): {
                    "port": i.server.port,
                    "master_pid": i.server.process.pid,
                    "workers": i.server.workers(),
                    "database": i.db.url,
                }
                for i in servers.instances
            },
            "domain_sets": {
                str(d.count): {
                    "port": d.server.port,
                    "master_pid": d.server.process.pid,
                    "workers": d.server.workers(),
                    "database": d.db.url,
                    "session_cookie": d.cookie,
                }
                for d in servers.domain_sets
            },
            "bare_port": servers.bare.port,
            "client_id": records.client_id,
            "machine_client_id": records.machine_client_id,
            "machine_client_secret": records.machine_client_secret,
            "device_client_id": records.device_client_id,
            "api_key": records.api_key,
            "session_cookie": servers.session_cookie,
            "username": seed.SERVICE_EMAIL,
            "password": seed.PASSWORD,
            "redirect_uri": seed.REDIRECT_URI,
            "inspect_tokens": {str(i.tokens): i.inspect_secrets[:5] for i in servers.instances},
            "authorize_path": records.authorize_path(),
            "exchange_path_prefix": records.exchange_path_prefix(),
        }
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"serve-{self.args.database}.json"
        path.write_text(json.dumps(info, indent=2))
        say(f"serving; details in {path.relative_to(REPO)}; Ctrl-C (or SIGTERM) stops it")
        while all(i.server.process.alive() for i in servers.instances):
            time.sleep(1)
        return 1

    def profile(self, keys: list[str]) -> None:
        """Run each scenario of ``keys`` once more with py-spy sampling the authsvc it loads."""
        for key in keys:
            key = f"inspect_bearer_{self.servers.main.tokens}" if key == "inspect_bearer" else key
            out = RESULTS / f"profile-{key}.txt"
            load = self.scenarios.load(key)
            pid = next((i.server.process.pid for i in self.servers.instances if i.server.port == load.port), None)
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
        """Remove the run's directory, or keep its logs (and say where) when something failed."""
        if self.failed:
            say(f"logs kept in {self.run_dir}")
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.check is not None:
        return targets.check(args.check)
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
