"""What the benchmark checks beside the table: immediate revocation, and memory per worker and by role.

Revocation must stay immediate on every worker of every instance (issue 8: no
cache may let a revoked token pass): warm every worker with a token and an API
key, revoke both, ask again at once; every answer must be 401.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import time
from pathlib import Path
from typing import Any

from bench import seed
from bench.scenarios import INSPECT_PATH
from bench.servers import Instance, Servers
from devtools.services import Gunicorn


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
    """Each worker's pid and resident memory in MB."""
    return [{"pid": pid, "rss_mb": rss_mb(pid)} for pid in server.workers()]


def memory_by_role(servers: Servers, every_row: bool) -> dict[str, list[dict]]:
    """Workers' memory by what they served: inspect only, every row (when the run measured every row), nothing.

    The inspect-only authsvc served the two inspect loads and nothing else; the
    first database's served every row but the larger counts' inspect and SCIM
    rows, which run the same code on larger tables; the bare route is what a
    worker of the same stack holds with none of authsvc.
    """
    roles = {"inspect only": worker_memory(servers.inspect_only), "bare route": worker_memory(servers.bare)}
    if every_row:
        roles["every row"] = worker_memory(servers.main.server)
    return roles


def _burst(port: int, headers: dict[str, str], count: int, concurrency: int) -> dict[str, int]:
    """``count`` inspect requests over ``concurrency`` connections: how many got each status."""

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


def check_revocation(instance: Instance, seeded: seed.Seed) -> dict[str, Any]:
    """Warm every worker with a token and a key, revoke both, ask again at once: every answer must be 401."""
    port = instance.server.port
    workers = instance.server.workers()
    count, concurrency = 50 * len(workers), 4 * len(workers)
    token, key = instance.inspect_secrets[0], seeded.api_key
    bearer, api_key = {"Authorization": f"Bearer {token}"}, {"X-API-Key": key}
    before = {
        "token": _burst(port, bearer, count, concurrency),
        "api_key": _burst(port, api_key, count, concurrency),
    }
    switches = {pid: _ctxt_switches(pid) for pid in workers}
    # Through the API if the service has RFC 7009 revocation; else as an operator would, in SQL.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(
        "POST",
        "/auth/oauth/revoke",
        body=f"token={token}&client_id={seeded.client_id}",
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
    instance.conn.execute("UPDATE api_key SET revoked_at = %s WHERE id = %s", (int(time.time()), seeded.api_key_id))
    after = {
        "token": _burst(port, bearer, count, concurrency),
        "api_key": _burst(port, api_key, count, concurrency),
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


def _ctxt_switches(pid: int) -> int:
    """Voluntary context switches of ``pid`` so far: a worker that served a burst has gained some."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0
