"""``python -m bench --check``: the benchmark's targets, read from a run's JSON, for a person or a nightly job.

Each target is a ratio of the same run (so that the machine's speed cancels
out), the ID token's extra CPU, the workers' memory, or revocation. Inspect is
held to the round-trip floor and each grant to its twin on Authlib's
documented token endpoint (bench/README.md, "The floors"), not to the bare
route, which does none of the work they cannot avoid. A target
whose rows the run did not measure (``--only``) is reported as not measured,
which fails the check too: a nightly job must run every row. CI runs no
timings; it runs the unit test of this module on a recorded file.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LATEST = Path(__file__).resolve().parent / "results" / "latest.json"

INSPECT_MIN = 0.9  # of the round-trip floor, bearer header and API key
GRANT_MIN = 0.8  # of its Authlib twin: code flow (per request), refresh, client credentials
# Each tenancy row, its worker's start and memory, at the most domains over the fewest (10,000 within 5 % of 10).
DOMAINS_SCALE_MIN = 0.95
DOMAINS_COST_MAX = 1.05  # a worker's start time and memory
DOMAIN_KINDS = {
    "inspect": "inspect",
    "signin": "sign-in POST",
    "code_flow": "code flow",
    "discovery": "discovery",
    "jwks": "JWKS",
}
# The admin API's domain list and a domain's page in the console, at the most domains: p95 in ms.
ADMIN_P95_MAX_MS = 50.0
ADMIN_PAGES = {"admin_list": "the admin API's domain list", "console": "a domain's page in the console"}
# Ours over django-oauth-toolkit's, in the same rounds on the same cores (bench/README.md, "Peers").
PEER_INSPECT_MIN = 4.0
PEER_GRANT_MIN = 1.5
# Our grant's row, its twin's, and how --check names it.
GRANT_TWINS = (
    ("code_flow", "twin_code_flow", "code flow (per request)"),
    ("refresh", "twin_refresh", "refresh grant"),
    ("client_credentials", "twin_client_credentials", "client credentials"),
)
ID_TOKEN_EXTRA_MAX_MS = 1.5  # CPU ms per request, code flow with openid over without
INSPECT_ONLY_RSS_MAX_MB = 80.0  # a worker that served inspect only
EVERY_ROW_OVER_BARE_MAX_MB = 45.0  # a worker that served every row, over the bare route's worker
TOKENS_SCALE_MIN = 0.95  # the largest token count's inspect over the smallest's
PURGE_P99_MAX = 2.0  # inspect's p99 while the purge runs, over its p99 without
# Overload (bench/stress.py): at twice the sustained rate, only these answers (a 503 with Retry-After),
# the served answers' p99 within the queue bound (AUTHSVC_QUEUE_TIMEOUT) plus this, back to normal within
# RECOVERY_MAX_S of the load's end, and the generator really sending twice the rate (OFFERED_MIN of it).
OVERLOAD_STATUSES = {"200", "401", "429", "503"}
OVERLOAD_P99_OVER_QUEUE_S = 0.5
RECOVERY_MAX_S = 5.0
OFFERED_MIN = 1.9


@dataclass
class Outcome:
    target: str
    value: str
    met: bool


def _rows(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["key"]: row for row in result.get("table", [])}


def failed(row: dict[str, Any]) -> bool:
    """Whether some of the row's requests got an answer it does not expect: its rate is not the work it names.

    (A twin that issued no refresh token to rotate to once answered most of its refreshes 400 quickly, and
    ours looked 2.5x faster than it.)
    """
    return row.get("ok", row.get("requests", 0)) < row.get("requests", 0) or bool(row.get("socket_errors"))


def ratio(rows: dict[str, dict[str, Any]], key: str, baseline: str) -> float | None:
    """``key``'s req/s over ``baseline``'s: the median of the rounds' ratios (a burst hits both alike)."""
    row, base = rows.get(key), rows.get(baseline)
    if row is None or base is None or failed(row) or failed(base):
        return None
    pairs = [r / b for r, b in zip(row.get("rounds_rps", []), base.get("rounds_rps", []), strict=False) if b]
    if pairs and len(row["rounds_rps"]) == len(base["rounds_rps"]):
        return statistics.median(pairs)
    return row["rps"] / base["rps"] if base.get("rps") else None


def _at_least(rows: dict[str, dict[str, Any]], label: str, key: str, baseline: str, minimum: float) -> Outcome:
    value = ratio(rows, key, baseline)
    target = f"{label} >= {minimum} x {baseline}"
    broken = [k for k in (key, baseline) if k in rows and failed(rows[k])]
    if broken:
        return Outcome(target, f"not measured: {', '.join(broken)} had failed requests", False)
    if value is None:
        return Outcome(target, "not measured", False)
    return Outcome(target, f"{value:.3f}", value >= minimum)


def evaluate(result: dict[str, Any]) -> list[Outcome]:
    """Every target against one run's JSON (bench/results/*.json)."""
    rows = _rows(result)
    inspect = sorted(
        (k for k in rows if k.startswith("inspect_bearer_") and k[15:].isdigit()), key=lambda k: int(k[15:])
    )
    outcomes = []
    if inspect:
        outcomes.append(_at_least(rows, "inspect, bearer header", inspect[0], "roundtrip", INSPECT_MIN))
    else:
        outcomes.append(Outcome(f"inspect, bearer header >= {INSPECT_MIN} x roundtrip", "not measured", False))
    outcomes.append(_at_least(rows, "inspect, X-API-Key", "inspect_api_key", "roundtrip", INSPECT_MIN))
    if len(inspect) > 1:
        outcomes.append(_at_least(rows, "inspect at the most tokens", inspect[-1], inspect[0], TOKENS_SCALE_MIN))
    else:
        outcomes.append(Outcome(f"inspect at 10M tokens >= {TOKENS_SCALE_MIN} x 10k", "not measured", False))
    for key, twin, label in GRANT_TWINS:
        outcomes.append(_at_least(rows, label, key, twin, GRANT_MIN))
    if inspect:
        outcomes.append(_at_least(rows, "inspect, bearer header", inspect[0], "dot_inspect", PEER_INSPECT_MIN))
    else:
        outcomes.append(Outcome(f"inspect, bearer header >= {PEER_INSPECT_MIN} x dot_inspect", "not measured", False))
    for key, _, label in GRANT_TWINS:
        outcomes.append(_at_least(rows, label, key, f"dot_{key}", PEER_GRANT_MIN))
    plain, openid = rows.get("code_flow", {}), rows.get("code_flow_openid", {})
    target = f"ID token's extra CPU per request <= {ID_TOKEN_EXTRA_MAX_MS} ms"
    if plain.get("cpu_ms_per_request") is None or openid.get("cpu_ms_per_request") is None:
        outcomes.append(Outcome(target, "not measured", False))
    else:
        extra = openid["cpu_ms_per_request"] - plain["cpu_ms_per_request"]
        outcomes.append(Outcome(target, f"{extra:.2f} ms", extra <= ID_TOKEN_EXTRA_MAX_MS))
    outcomes += _purge(result.get("purge_under_load"))
    outcomes += _overload(result.get("overload", []))
    outcomes += _memory(result.get("memory_roles", {}))
    outcomes += _domains(rows, result.get("domain_sets", {}))
    revocation = result.get("revocation") or {}
    target = "revocation immediate on every worker"
    if "immediate" in revocation:
        outcomes.append(
            Outcome(target, "immediate" if revocation["immediate"] else "NOT immediate", revocation["immediate"])
        )
    else:
        outcomes.append(Outcome(target, "not measured", False))
    return outcomes


def _purge(row: dict[str, Any] | None) -> list[Outcome]:
    """Inspect's p99 while ``tokens purge`` runs on the largest database, within PURGE_P99_MAX of its p99 without."""
    target = f"inspect's p99 during a purge <= {PURGE_P99_MAX} x without"
    if not row or not row.get("p99_ms_without") or row.get("p99_ms_during") is None:
        return [Outcome(target, "not measured", False)]
    if row.get("purge_overlapped_s", 0) < 0.5 * row.get("seconds", 0):
        return [Outcome(target, f"the purge ended after {row['purge_overlapped_s']} s of the slice", False)]
    ratio = row["p99_ms_during"] / row["p99_ms_without"]
    value = f"{ratio:.2f} ({row['p99_ms_during']} ms against {row['p99_ms_without']} ms)"
    return [Outcome(target, value, ratio <= PURGE_P99_MAX)]


def _overload(rows: list[dict[str, Any]]) -> list[Outcome]:
    """At twice the sustained rate: only allowed answers, the served ones' p99 bounded, normal again soon."""
    outcomes = []
    for name in ("inspect", "token"):
        row = next((r for r in rows if r["key"] == f"overload_{name}"), None)
        label = f"{name} at twice its sustained rate"
        bound_s = (row or {}).get("queue_timeout_s", 1.0) + OVERLOAD_P99_OVER_QUEUE_S
        if row is None:
            outcomes.append(Outcome(f"{label}: measured", "not measured", False))
            continue
        offered = row["offered_rps"] / row["sustained_rps"] if row["sustained_rps"] else 0.0
        target = f"{label}: offered >= {OFFERED_MIN} x sustained"
        outcomes.append(Outcome(target, f"{offered:.2f}", offered >= OFFERED_MIN))
        others = {k: v for k, v in row["statuses"].items() if k not in OVERLOAD_STATUSES}
        value = f"{row['statuses']}, {row['without_retry_after']} 503 without Retry-After"
        met = not others and not row["without_retry_after"]
        outcomes.append(Outcome(f"{label}: only 200, 401, 429 or 503 with Retry-After", value, met))
        p99 = row.get("served_p99_ms")
        target = f"{label}: p99 of the served <= {1000 * bound_s:.0f} ms (queue bound + {OVERLOAD_P99_OVER_QUEUE_S} s)"
        outcomes.append(
            Outcome(target, "none served", False)
            if p99 is None
            else Outcome(target, f"{p99:.0f} ms", p99 <= 1000 * bound_s)
        )
        recovery = row.get("recovery_s")
        target = f"{label}: back to normal <= {RECOVERY_MAX_S:.0f} s after"
        outcomes.append(
            Outcome(target, "not within 30 s", False)
            if recovery is None
            else Outcome(target, f"{recovery:.2f} s", recovery <= RECOVERY_MAX_S)
        )
    return outcomes


def _largest_rss(workers: list[dict[str, Any]]) -> float | None:
    rss = [w["rss_mb"] for w in workers if w.get("rss_mb") is not None]
    return max(rss) if rss else None


def _memory(roles: dict[str, list[dict[str, Any]]]) -> list[Outcome]:
    """Memory by role: a worker that served inspect only; one that served every row, over the bare route's."""
    inspect_only = _largest_rss(roles.get("inspect only", []))
    target = f"resident memory of a worker that served inspect only <= {INSPECT_ONLY_RSS_MAX_MB:.0f} MB"
    outcomes = [
        Outcome(target, f"{inspect_only:.1f} MB", inspect_only <= INSPECT_ONLY_RSS_MAX_MB)
        if inspect_only is not None
        else Outcome(target, "not measured", False)
    ]
    every_row, bare = _largest_rss(roles.get("every row", [])), _largest_rss(roles.get("bare route", []))
    target = f"resident memory of a worker that served every row <= bare route's + {EVERY_ROW_OVER_BARE_MAX_MB:.0f} MB"
    if every_row is None or bare is None:
        outcomes.append(Outcome(target, "not measured", False))
    else:
        value = f"{every_row:.1f} MB against {bare:.1f} MB (+{every_row - bare:.1f})"
        outcomes.append(Outcome(target, value, every_row - bare <= EVERY_ROW_OVER_BARE_MAX_MB))
    return outcomes


def _domains(rows: dict[str, dict[str, Any]], sets: dict[str, dict[str, Any]]) -> list[Outcome]:
    """Every tenancy row, the workers' start and their memory at the most domains, within 5 % of the fewest."""
    outcomes = []
    for kind, label in DOMAIN_KINDS.items():
        counts = sorted(int(k.rsplit("_", 1)[1]) for k in rows if k.startswith(f"domains_{kind}_"))
        if len(counts) < 2:
            target = f"{label} at the most domains >= {DOMAINS_SCALE_MIN} x the fewest"
            outcomes.append(Outcome(target, "not measured", False))
            continue
        first, last = f"domains_{kind}_{counts[0]}", f"domains_{kind}_{counts[-1]}"
        outcomes.append(_at_least(rows, f"{label} at {counts[-1]:,} domains", last, first, DOMAINS_SCALE_MIN))
    for kind, label in ADMIN_PAGES.items():
        counts = sorted(int(k.rsplit("_", 1)[1]) for k in rows if k.startswith(f"domains_{kind}_"))
        target = f"{label} at the most domains: p95 < {ADMIN_P95_MAX_MS:.0f} ms"
        p95 = rows[f"domains_{kind}_{counts[-1]}"].get("p95_ms") if counts else None
        if p95 is None:
            outcomes.append(Outcome(target, "not measured", False))
        else:
            outcomes.append(Outcome(target, f"{p95:.1f} ms at {counts[-1]:,} domains", p95 < ADMIN_P95_MAX_MS))
    counts = sorted(sets, key=int)
    most = DOMAINS_COST_MAX
    for what, label in (("start_s", "a worker's start"), ("rss_mb", "a worker's memory")):
        target = f"{label} at the most domains <= {most:.2f} x the fewest"
        if len(counts) < 2:
            outcomes.append(Outcome(target, "not measured", False))
            continue
        first, last = (_cost(sets[c], what) for c in (counts[0], counts[-1]))
        if not first or last is None:
            outcomes.append(Outcome(target, "not measured", False))
        else:
            value = f"{last / first:.3f} ({last:.2f} against {first:.2f})"
            outcomes.append(Outcome(target, value, last <= most * first))
    return outcomes


def _cost(domain_set: dict[str, Any], what: str) -> float | None:
    if what == "start_s":
        return domain_set.get("start_s")
    return _largest_rss(domain_set.get("workers", []))


def check(path: Path = LATEST) -> int:
    """Print each target's outcome for the run in ``path``; 0 when every one is met, 1 when not, 2 without a run."""
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"bench --check: cannot read {path}: {exc}")
        return 2
    settings = result.get("settings", {})
    print(f"bench --check: {path} (run {settings.get('started', '?')}, commit {settings.get('commit', '?')})")
    outcomes = evaluate(result)
    for outcome in outcomes:
        print(f"  {'met    ' if outcome.met else 'NOT MET'}  {outcome.target}: {outcome.value}")
    missed = sum(not o.met for o in outcomes)
    print(f"{len(outcomes) - missed} of {len(outcomes)} targets met")
    return 1 if missed else 0
