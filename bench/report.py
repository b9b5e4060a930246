"""The table, the targets (bench/targets.py, as `--check` judges them), and the JSON written beside them.

Each scenario was measured in rounds interleaved with the others. Its req/s is
the total of its rounds; p50 and p99 are the medians of the rounds'; ``±%`` is
half the spread between its slowest and fastest round. A ratio is the median
over rounds of (scenario's req/s / its baseline's req/s in the same round), so
that a burst of other work on the machine cancels out.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.load import Result
from bench.noise import CpuUse
from bench.targets import DOMAIN_KINDS, DOMAINS_SCALE_MIN, GRANT_MIN, INSPECT_MIN, TOKENS_SCALE_MIN, evaluate


def tokens_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


@dataclass
class Row:
    label: str
    key: str
    baseline: str | None = None  # key of the baseline row
    minimum: float | None = None  # target ratio, where issue 8 (as issue 14 revised it) sets one
    short: str = ""  # how the row is named in the "vs" column


def rows(
    token_counts: list[int], user_counts: list[int] | None = None, domain_counts: list[int] | None = None
) -> list[Row]:
    first = f"inspect_bearer_{token_counts[0]}"
    out = [
        Row("bare Flask route (ceiling)", "bare", short="bare route"),
        # Inspect's floor is one prepared SELECT on the same PostgreSQL, not the bare route.
        Row("round-trip floor (one SELECT)", "roundtrip", "bare", short="round trip"),
    ]
    for i, n in enumerate(token_counts):
        label = f"inspect, bearer header, {tokens_label(n)} tokens"
        if i == 0:
            out.append(Row(label, first, "roundtrip", INSPECT_MIN, short=f"inspect {tokens_label(n)}"))
        else:
            minimum = TOKENS_SCALE_MIN if n == token_counts[-1] else None
            out.append(Row(label, f"inspect_bearer_{n}", first, minimum, short=f"inspect {tokens_label(n)}"))
    out += [
        Row("inspect, X-API-Key header", "inspect_api_key", "roundtrip", INSPECT_MIN),
        # Each grant's floor is its twin on Authlib's documented token endpoint (bench/twin.py).
        Row("Authlib twin: code flow", "twin_code_flow", "bare", short="twin flow"),
        Row("Authlib twin: refresh grant", "twin_refresh", "bare", short="twin refresh"),
        Row("Authlib twin: client credentials", "twin_client_credentials", "bare", short="twin cc"),
        # The peer, django-oauth-toolkit (DOT): ours must serve 4x its inspect and 1.5x each of its grants.
        Row("DOT: inspect (protected resource)", "dot_inspect", "bare", short="DOT inspect"),
        Row("DOT: code flow", "dot_code_flow", "bare", short="DOT flow"),
        Row("DOT: refresh grant", "dot_refresh", "bare", short="DOT refresh"),
        Row("DOT: client credentials", "dot_client_credentials", "bare", short="DOT cc"),
        # --before DIR: the same two rows served by an earlier checkout, in the same run.
        Row(f"inspect, bearer, {tokens_label(token_counts[0])}, --before", "inspect_bearer_before", "bare"),
        Row("inspect, X-API-Key, --before", "inspect_api_key_before", "bare"),
        Row("code flow, --before", "code_flow_before", "bare"),
        Row("code flow + ID token, --before", "code_flow_openid_before", "code_flow_before"),
        Row("refresh grant, --before", "refresh_before", "bare"),
        Row("device grant poll, --before", "device_poll_before", "bare"),
        Row("client credentials, --before", "client_credentials_before", "bare"),
        Row("sign-in, --before", "signin_before", "bcrypt"),
        # --ha: the same rows over a healthy Sentinel / multi-host cluster (issue 28), against the plain ones.
        Row(f"inspect, bearer, {tokens_label(token_counts[0])}, --ha", "inspect_bearer_ha", first),
        Row("code flow, --ha", "code_flow_ha", "code_flow"),
        Row("code flow, authorise + exchange", "code_flow", "twin_code_flow", GRANT_MIN, short="code flow"),
        # Issue 15: what the ID token (RS256, signed per exchange) adds to the same flow.
        Row("code flow + ID token (RS256)", "code_flow_openid", "code_flow"),
        Row("refresh grant (rotating)", "refresh", "twin_refresh", GRANT_MIN, short="refresh grant"),
        # Issue 27: SCIM's userName filter is an index lookup, flat as the domain grows.
        *_scim_rows(user_counts or []),
        # Ten thousand tenants cost nothing per request: each row at the most domains against the fewest.
        *_domain_rows(domain_counts or []),
        Row("device grant poll (pending)", "device_poll", "bare"),
        Row("client credentials grant", "client_credentials", "twin_client_credentials", GRANT_MIN, short="cc grant"),
        # A signature check (ES256) and a jti write in Redis instead of a digest compare.
        Row("client credentials, private_key_jwt", "client_credentials_jwt", "client_credentials"),
        # Issue 26: a DPoP proof (an ES256 check, a jti and the nonces in Redis) on the same grant and on inspect.
        Row("client credentials, DPoP", "client_credentials_dpop", "client_credentials"),
        # RFC 8693: the subject token read and the act claim written, on top of the client credentials grant.
        Row("token exchange (RFC 8693)", "token_exchange", "client_credentials", short="exchange"),
        # A Client ID Metadata Document's client (MCP clients), its document cached: the code exchange alone.
        Row(
            "code exchange, CIMD client, cached",
            "metadata_document_exchange",
            "client_credentials",
            short="CIMD exchange",
        ),
        Row(
            f"inspect, DPoP-bound token, {tokens_label(token_counts[0])} tokens",
            "inspect_dpop",
            first,
            short="inspect DPoP",
        ),
        Row("bcrypt checkpw (floor)", "bcrypt", short="bcrypt"),
        Row("password grant", "password_grant", "bcrypt", 0.9),
        Row("sign-in", "signin", "bcrypt"),
    ]
    return out


DOMAIN_ROWS = {
    "inspect": "inspect, bearer header",
    "signin": "sign-in POST",
    "code_flow": "code flow",
    "discovery": "discovery, a random domain",
    "jwks": "JWKS, a random domain",
    "admin_list": "admin API, domain list",
    "console": "console, a domain's page",
}


def _domain_rows(domain_counts: list[int]) -> list[Row]:
    out = []
    for kind, label in DOMAIN_ROWS.items():
        for i, n in enumerate(domain_counts):
            key, short = f"domains_{kind}_{n}", f"{tokens_label(n)} domains"
            if i == 0:
                out.append(Row(f"{label}, {tokens_label(n)} domains", key, short=short))
            else:
                # The admin pages are held to a p95 (--check), not to their figure at the fewest domains.
                minimum = DOMAINS_SCALE_MIN if kind in DOMAIN_KINDS else None
                first = f"domains_{kind}_{domain_counts[0]}"
                out.append(Row(f"{label}, {tokens_label(n)} domains", key, first, minimum, short=short))
    return out


def _scim_rows(user_counts: list[int]) -> list[Row]:
    out = []
    for i, n in enumerate(dict.fromkeys(user_counts)):
        label = f"SCIM userName eq filter, {tokens_label(n)} users"
        if i == 0:
            out.append(Row(label, f"scim_filter_{n}", "bare", short=f"SCIM {tokens_label(n)}"))
        else:
            out.append(Row(label, f"scim_filter_{n}", f"scim_filter_{user_counts[0]}", 0.9))
    return out


def summarise(results: list[Result]) -> dict[str, Any]:
    duration = sum(r.duration for r in results)
    ok = sum(r.ok for r in results)
    statuses: dict[str, int] = {}
    for r in results:
        for status, n in r.statuses.items():
            statuses[status] = statuses.get(status, 0) + n
    per_round = [r.rps for r in results]
    rps = ok / duration if duration else 0.0
    return {
        "rps": round(rps, 2),
        "spread_pct": round(50 * (max(per_round) - min(per_round)) / rps, 1) if rps else None,
        "p50_ms": round(statistics.median(r.p50_ms for r in results), 2),
        "p99_ms": round(statistics.median(r.p99_ms for r in results), 2),
        "p95_ms": round(statistics.median(r.p95_ms for r in results), 2),
        "requests": sum(r.requests for r in results),
        "ok": ok,
        "socket_errors": sum(r.socket_errors for r in results),
        "statuses": statuses,
        "duration": round(duration, 2),
        "generator": results[0].generator,
        "connections": results[0].connections,
        "rounds_rps": [round(x, 2) for x in per_round],
    }


def paired_ratio(results: list[Result], baseline: list[Result]) -> float | None:
    if len(results) == len(baseline):
        pairs = [r.rps / b.rps for r, b in zip(results, baseline, strict=True) if b.rps]
        return statistics.median(pairs) if pairs else None
    base = sum(b.ok for b in baseline) / sum(b.duration for b in baseline)
    return (sum(r.ok for r in results) / sum(r.duration for r in results)) / base if base else None


def cpu_per_request_ms(results: list[Result], use: list[CpuUse]) -> float | None:
    ok = sum(r.ok for r in results)
    cpu = sum(u.server_cpu_s for u in use)
    return 1000 * cpu / ok if ok and cpu else None


def build(
    rounds: dict[str, list[Result]],
    cpu: dict[str, list[CpuUse]],
    token_counts: list[int],
    memory: dict[str, list[dict]],
    memory_roles: dict[str, list[dict]],
    revocation: dict[str, Any],
    settings: dict[str, Any],
    domain_sets: dict[str, dict[str, Any]] | None = None,
    stress: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the run found, as the JSON written to bench/results/."""
    table = []
    user_counts = sorted(int(key.rsplit("_", 1)[1]) for key in rounds if key.startswith("scim_filter_"))
    domain_counts = sorted({int(key.rsplit("_", 1)[1]) for key in rounds if key.startswith("domains_")})
    all_rows = rows(token_counts, user_counts, domain_counts)
    short = {r.key: r.short or r.label for r in all_rows}
    for row in all_rows:
        if row.key not in rounds:
            continue
        ratio = paired_ratio(rounds[row.key], rounds[row.baseline]) if row.baseline in rounds else None
        cost = cpu_per_request_ms(rounds[row.key], cpu.get(row.key, [])) if row.key != "bcrypt" else None
        base_cost = (
            cpu_per_request_ms(rounds[row.baseline], cpu.get(row.baseline, []))
            if row.baseline in rounds and row.baseline != "bcrypt"
            else None
        )
        entry = {
            "scenario": row.label,
            "key": row.key,
            **summarise(rounds[row.key]),
            "noise_cores": round(
                statistics.mean(u.others_cores for u in cpu.get(row.key, [])) if row.key in cpu else 0.0, 2
            ),
            "cpu_ms_per_request": None if cost is None else round(cost, 3),
            # The same comparison made with CPU cost (baseline's / this one's): what the req/s ratio
            # would be on a quiet machine with every core busy serving.
            "cpu_ratio": None if cost is None or base_cost is None else round(base_cost / cost, 3),
            "baseline": row.baseline,
            "vs": short.get(row.baseline or "", ""),
            "ratio": None if ratio is None else round(ratio, 3),
            "target": row.minimum,
            "met": None if row.minimum is None or ratio is None else ratio >= row.minimum,
        }
        if row.key.startswith(("inspect_bearer", "inspect_api_key")) and row.baseline != "bare" and "bare" in rounds:
            entry["ratio_to_bare"] = round(paired_ratio(rounds[row.key], rounds["bare"]) or 0, 3)
        table.append(entry)
    result = {
        "settings": settings,
        "table": table,
        "memory": memory,
        "memory_roles": memory_roles,
        "revocation": revocation,
        # Per --domains count: its worker's start (s) and memory after the run.
        "domain_sets": domain_sets or {},
        # The overload rows and the purge under load (bench/stress.py), when measured.
        **(stress or {}),
    }
    # The targets are --check's (bench/targets.py), judged on this very result: one list, one rule each.
    result["targets"] = [asdict(outcome) for outcome in evaluate(result)]
    return result


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def render(report: dict[str, Any]) -> str:
    s = report["settings"]
    lines = [
        f"authsvc benchmark {s['started']}, commit {s['commit']}: generator {s['generator']}, "
        f"{s['workers']} gunicorn workers, {s['connections']} connections ({s['bcrypt_connections']} for "
        f"bcrypt-bound), {s['duration']:.0f} s per scenario ({s.get('bcrypt_duration', s['duration']):.0f} s if "
        f"bcrypt-bound) in {s['rounds']} rounds, bcrypt cost {s['bcrypt_rounds']}, "
        f"{s.get('waited_for_quiet_s', 0):.0f} s spent waiting for a quiet machine"
        + (f", priority +{s['priority']}" if s.get("priority") else ""),
        "",
    ]
    header = (
        f"{'scenario':<34} {'req/s':>8} {'±%':>4} {'p50 ms':>7} {'p99 ms':>7} {'noise':>5} {'cpu ms':>6}  "
        f"{'vs':<11} {'ratio':>5} {'cpu':>5}  {'target':<7} result"
    )
    lines += [header, "-" * len(header)]
    for r in report["table"]:
        result = "" if r["met"] is None else ("met" if r["met"] else "NOT MET")
        target = f">= {r['target']}" if r["target"] is not None else ""
        failed = r["requests"] - r["ok"] + r["socket_errors"]
        warn = f"  ({failed} of {r['requests'] + r['socket_errors']} failed)" if failed else ""
        lines.append(
            f"{r['scenario']:<34} {r['rps']:>8.1f} {_fmt(r['spread_pct'], '.0f'):>4} {r['p50_ms']:>7.1f} "
            f"{r['p99_ms']:>7.1f} {r['noise_cores']:>5.2f} {_fmt(r['cpu_ms_per_request'], '.2f'):>6}  {r['vs']:<11} "
            f"{_fmt(r['ratio'], '.2f'):>5} {_fmt(r['cpu_ratio'], '.2f'):>5}  {target:<7} {result}{warn}"
        )
    lines += [
        "",
        "±%: half the spread between rounds; noise: cores that other processes used meanwhile; cpu ms: server",
        "CPU (workers, Redis, PostgreSQL backends) per request; ratio: req/s over the baseline's, median of",
        "rounds; cpu: the baseline's cpu ms over this one's (the ratio a quiet machine would show). The code",
        "flow counts authorise and exchange as one request each. See bench/README.md.",
        "",
    ]
    for group, workers in report["memory"].items():
        rss = ", ".join(f"{w['rss_mb']:.1f}" for w in workers if w["rss_mb"] is not None)
        lines.append(f"resident memory per {group} worker after the run (MB): {rss}")
    for role, workers in report.get("memory_roles", {}).items():
        rss = ", ".join(f"{w['rss_mb']:.1f}" for w in workers if w["rss_mb"] is not None)
        lines.append(f"resident memory by role, {role} (MB): {rss}")
    for count, info in report.get("domain_sets", {}).items():
        rss = ", ".join(f"{w['rss_mb']:.1f}" for w in info["workers"] if w["rss_mb"] is not None)
        lines.append(f"{count} domains: workers started in {info['start_s']:.2f} s, resident memory (MB): {rss}")
    for row in report.get("overload", []):
        lines.append(
            f"overload, {row['key'][9:]}: sustained {row['sustained_rps']} req/s, at {row['offered_rps']} req/s for "
            f"{row['seconds']:g} s answered {row['statuses']} ({row['without_retry_after']} 503 without Retry-After); "
            f"served p99 {row['served_p99_ms']} ms; back to normal {row['recovery_s']} s after"
        )
    purge = report.get("purge_under_load")
    if purge:
        lines.append(
            f"purge under load: inspect p99 {purge['p99_ms_without']} ms without, {purge['p99_ms_during']} ms while "
            f"the purge ran ({purge['purge_overlapped_s']} s of the slice; {purge['purge']}, {purge['purge_s']} s)"
        )
    for check in report["revocation"].get("instances", []):
        lines.append(f"revocation, {check['summary']}")
    lines += ["", 'targets (bench/README.md, "Checking the targets"):']
    for t in report["targets"]:
        mark = "met    " if t["met"] else "NOT MET"
        lines.append(f"  {mark}  {t['target']}: {t['value']}")
    return "\n".join(lines)


def write(report: dict[str, Any], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2)
    latest = directory / "latest.json"
    latest.write_text(text)
    stamp = report["settings"]["started"].replace(":", "").replace("-", "")
    (directory / f"run-{stamp}.json").write_text(text)
    return latest
