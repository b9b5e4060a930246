"""How the scenarios are measured: the generator, the interleaved rounds, the quiet machine.

Every scenario is warmed up once, then measured in ``--rounds`` slices that
are interleaved with the other scenarios' slices, so that a burst of other
work on the shared machine hits all of them alike. Before each slice it waits
(at most 15 s, ``--max-wait`` in all) until other processes use fewer than
``--quiet-below`` cores, and it counts the CPU the servers and everyone else
spent meanwhile (``bench/noise.py``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bench import BenchError, baselines, say, seed
from bench.load import Load, Result
from bench.noise import CpuMeter, CpuUse, wait_quiet
from bench.pyload import PythonLoad
from bench.scenarios import Scenarios, bcrypt_bound
from bench.servers import Servers
from bench.wrk import Wrk
from bench.wrk import find as find_wrk


def choose_generator(args: argparse.Namespace, run_dir: Path) -> Wrk | PythonLoad:
    """wrk unless ``--generator python`` or wrk cannot be had (then the Python one, unless ``--generator wrk``)."""
    if args.generator != "python":
        binary = find_wrk()
        if binary:
            return Wrk(binary, run_dir)
        if args.generator == "wrk":
            raise BenchError("wrk is not installed (apt-get install wrk)")
        say("wrk is not available: using the Python load generator")
    return PythonLoad()


def rounds_order(keys: list[str], r: int) -> list[str]:
    """The scenarios of round ``r`` (from 0): ``keys`` in order, and reversed every other round, so that no row
    always follows the same one (what a slice leaves behind, a checkpoint, a vacuum, is not always the same
    row's); the bcrypt-bound rows stay after the fast ones (bench/README.md, "Ten thousand domains")."""
    fast = [k for k in keys if not bcrypt_bound(k)]
    slow = [k for k in keys if bcrypt_bound(k)]
    return fast + slow if r % 2 == 0 else fast[::-1] + slow[::-1]


class Measurement:
    """The measured rounds of every scenario: their results and CPU use, and whether any failed."""

    def __init__(
        self, args: argparse.Namespace, servers: Servers, scenarios: Scenarios, generator: Wrk | PythonLoad
    ) -> None:
        self.args = args
        self.servers = servers
        self.scenarios = scenarios
        self.generator = generator
        # The servers' CPU includes the PostgreSQL backends of the run's databases.
        databases = [i.db.name for i in servers.instances] + ([servers.peer.db.name] if servers.peer else [])
        databases += [d.db.name for d in servers.domain_sets]  # the tenancy rows' copies
        self.meter = CpuMeter(servers.main.conn, databases, servers.ha_roots)
        self.rounds: dict[str, list[Result]] = {}
        self.cpu: dict[str, list[CpuUse]] = {}
        self.failed = False
        self.waited = 0.0

    def raise_priority(self) -> None:
        """Give this process (so everything it starts from now) and the backends of its databases priority."""
        if self.args.priority <= 0:
            return
        niceness = -self.args.priority
        pids = {os.getpid()} | self.meter.backends()
        for i in self.servers.instances:
            pids |= {i.server.process.pid, *i.server.workers()}
        pids |= {self.servers.bare.process.pid, *self.servers.bare.workers()}
        if self.servers.redis_pid:
            pids.add(self.servers.redis_pid)
        for pid in pids:
            try:
                os.setpriority(os.PRIO_PROCESS, pid, niceness)
            except OSError as exc:
                raise BenchError(f"--priority needs root: {exc}") from None

    def run_once(self, key: str, duration: float, load: Load | None = None) -> Result:
        """One slice (or warm-up) of ``key``, ``duration`` seconds long; ``load``, when given, prepared for it."""
        if key == "bcrypt":
            return baselines.bcrypt_rate(seed.PASSWORD, self.servers.seed.password_hash, self.args.workers, duration)
        return self.generator.run(load or self.scenarios.load(key), duration)

    def measure_all(self) -> None:
        """Every round of every scenario, printing a line per slice; a failing one sets ``failed``."""
        args = self.args
        keys = self.scenarios.keys()
        slice_ = max(1.0, round(args.duration / args.rounds))
        bcrypt_slice = max(1.0, round(args.bcrypt_duration / args.rounds))
        for r in range(args.rounds):
            say(f"round {r + 1} of {args.rounds}: {slice_:.0f} s per scenario, {bcrypt_slice:.0f} s if bcrypt-bound")
            for key in rounds_order(keys, r):
                if r == 0 and args.warmup > 0 and key != "bcrypt":
                    self.run_once(key, args.warmup)
                self.raise_priority()
                # Prepared before the wait and the meter: some rows' requests are made by the servers (the
                # metadata document client's codes are approved beforehand), which is not the row's work.
                load = None if key == "bcrypt" else self.scenarios.load(key)
                budget = min(15.0, args.max_wait - self.waited)
                if budget > 0:
                    waited, _ = wait_quiet(self.meter, args.quiet_below, budget)
                    self.waited += waited
                self.meter.start()
                result = self.run_once(key, bcrypt_slice if bcrypt_bound(key) else slice_, load)
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

    def serve_inspect_only(self, seconds: float = 3.0) -> None:
        """Inspect's two loads (bearer header, API key) on the authsvc that serves nothing else: memory by role."""
        for key in (f"inspect_bearer_{self.servers.main.tokens}", "inspect_api_key"):
            load = self.scenarios.load(key)
            load.name, load.port = f"{key}_inspect_only", self.servers.inspect_only.port
            result = self.generator.run(load, seconds)
            say(f"  {load.name:<24} {result.rps:9.1f} req/s (for the inspect-only worker's memory)")
            if result.ok == 0 or result.failed > 0.01 * max(1, result.requests):
                say(f"  {load.name}: {result.failed} FAILED {result.statuses}")
                self.failed = True
