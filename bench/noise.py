"""How busy the machine was with work that is not the benchmark's, while it measured.

The machine is shared (another engineer's test suite may run beside the
benchmark). For each measured slice this counts the CPU the whole machine
spent (``/proc/stat``) minus what the benchmark's own processes spent: this
process and everything it started (gunicorn masters and workers, wrk, the
Python generator, Redis) and the PostgreSQL backends serving its databases.
The rest, in cores, is the noise figure printed beside each scenario.
Approximate: PostgreSQL's own background processes count as noise.

The servers' share (gunicorn workers, Redis, the PostgreSQL backends of the
benchmark's databases; not the load generator) divided by the requests served
is the CPU cost per request, which other work on the machine disturbs far
less than it disturbs requests per second.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

_TICKS = os.sysconf("SC_CLK_TCK")


def _machine_busy() -> int:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return user + nice + system + irq + softirq + steal


def _proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, utime + stime) for every process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return table


@dataclass
class CpuUse:
    others_cores: float  # cores used by processes that are not the benchmark's
    server_cpu_s: float  # CPU seconds of the servers: gunicorn workers, Redis, PostgreSQL backends


class CpuMeter:
    def __init__(self, conn: psycopg.Connection | None, databases: list[str], roots: list[int] | None = None):
        self.conn = conn
        self.databases = databases
        # Server processes that are not our descendants (``--ha``'s postmasters, which daemonise):
        # they and everything under them (backends, WAL senders and receivers) count as the servers'.
        self.roots = roots or []
        self._start: tuple[float, int, int, dict[int, int]] | None = None

    def backends(self) -> set[int]:
        if self.conn is None:
            return set()
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = ANY(%s)", (self.databases,)
        ).fetchall()
        return {r[0] for r in rows}

    def _snapshot(self) -> tuple[int, dict[int, int]]:
        """(this process with its reaped children, {server pid: CPU ticks})."""
        table = _proc_table()
        me = os.getpid()
        servers = set(self.backends())
        tree = {me, *(pid for pid in self.roots if pid in table)}
        # Descendants of this process, however deep: gunicorn, Redis, a running generator.
        changed = True
        while changed:
            changed = False
            for pid, (ppid, _) in table.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    changed = True
        servers |= tree - {me}
        # wrk runs and generator processes that have ended are in this process's cutime/cstime.
        own = Path(f"/proc/{me}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(x) for x in own[11:15]), {pid: table[pid][1] for pid in servers if pid in table}

    def start(self) -> None:
        me, servers = self._snapshot()
        self._start = (time.monotonic(), _machine_busy(), me, servers)

    def stop(self) -> CpuUse:
        """What was spent since ``start``."""
        assert self._start is not None
        began, busy0, me0, servers0 = self._start
        elapsed = time.monotonic() - began
        busy = _machine_busy() - busy0
        me1, servers1 = self._snapshot()
        server = sum(t - servers0.get(pid, 0) for pid, t in servers1.items())
        others = busy - (me1 - me0) - server
        return CpuUse(
            others_cores=max(0.0, others / _TICKS / elapsed) if elapsed > 0 else 0.0,
            server_cpu_s=server / _TICKS,
        )


def wait_quiet(meter: CpuMeter, threshold: float, max_wait: float, sample: float = 1.0) -> tuple[float, float]:
    """Wait until others use less than ``threshold`` cores over ``sample`` s, at most ``max_wait`` s.

    Returns (seconds waited, the last sample's figure).
    """
    began = time.monotonic()
    while True:
        meter.start()
        time.sleep(sample)
        others = meter.stop().others_cores
        waited = time.monotonic() - began
        if others < threshold or waited >= max_wait:
            return waited, others
