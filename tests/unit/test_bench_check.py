"""``python -m bench --check`` judges a run's recorded results against the targets (no timing).

Inspect is judged against the round-trip floor and each grant against its twin on
Authlib's documented token endpoint (bench/README.md, "The floors").
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from bench import cli, targets
from tests.helpers import in_one_pass

# Files only (the code, the documents, a subprocess of its own), no database or store: the same on either pass.
pytestmark = in_one_pass("sqlite")

RECORDED = Path(__file__).resolve().parents[1] / "data" / "bench-2026-11-25.json"


@pytest.fixture
def recorded() -> dict:
    """The quiet run of 2026-11-25 08:39 (bench/README.md): inspect 0.58 of bare, code flow 0.07, 106 MB."""
    return json.loads(RECORDED.read_text())


FLOORS = ("roundtrip", "twin_code_flow", "twin_refresh", "twin_client_credentials")
PEER = ("dot_inspect", "dot_code_flow", "dot_refresh", "dot_client_credentials")
TENANCY = ("inspect", "signin", "code_flow", "discovery", "jwks", "admin_list", "console")


def meeting_every_target(result: dict) -> dict:
    result = copy.deepcopy(result)
    domains = [f"domains_{kind}_{n}" for kind in TENANCY for n in (10, 10000)]
    result["table"] += [{"key": key, "scenario": key} for key in FLOORS + PEER + tuple(domains)]
    rps = {"bare": 5000, "roundtrip": 4000, "inspect_bearer_10000": 3700, "inspect_bearer_1000000": 3600}
    rps |= {"inspect_api_key": 3700, "code_flow": 500, "refresh": 480, "client_credentials": 500, "device_poll": 700}
    rps |= {"code_flow_openid": 420, "twin_code_flow": 600, "twin_refresh": 550, "twin_client_credentials": 600}
    rps |= {"dot_inspect": 900, "dot_code_flow": 300, "dot_refresh": 100, "dot_client_credentials": 300}
    rps |= {key: 1000 for key in domains}
    for row in result["table"]:
        row["rps"] = rps[row["key"]]
        row["rounds_rps"] = [rps[row["key"]]] * 3
        row["p95_ms"] = 12.0
    cpu = {row["key"]: row for row in result["table"]}
    cpu["code_flow"]["cpu_ms_per_request"], cpu["code_flow_openid"]["cpu_ms_per_request"] = 2.0, 3.4
    result["domain_sets"] = {
        "10": {"start_s": 2.0, "workers": [{"pid": 7, "rss_mb": 76.0}]},
        "10000": {"start_s": 2.05, "workers": [{"pid": 8, "rss_mb": 79.0}]},
    }
    result["memory_roles"] = {
        "inspect only": [{"pid": 1, "rss_mb": 77.0}, {"pid": 2, "rss_mb": 78.0}],
        "every row": [{"pid": 3, "rss_mb": 104.0}, {"pid": 4, "rss_mb": 107.0}],
        "bare route": [{"pid": 5, "rss_mb": 61.9}, {"pid": 6, "rss_mb": 62.0}],
    }
    result["purge_under_load"] = {
        "key": "purge_under_load",
        "seconds": 10,
        "p99_ms_without": 4.0,
        "p99_ms_during": 7.9,
        "purge_overlapped_s": 10,
    }
    result["overload"] = [
        {
            "key": f"overload_{name}",
            "sustained_rps": 2000.0,
            "offered_rps": 3990.0,
            "statuses": {"200": 19000, "503": 20900},
            "without_retry_after": 0,
            "served_p99_ms": 1450.0,
            "recovery_s": 0.4,
            "queue_timeout_s": 1.0,
        }
        for name in ("inspect", "token")
    ]
    return result


def overload(result: dict, name: str) -> dict:
    return next(r for r in result["overload"] if r["key"] == f"overload_{name}")


def row(result: dict, key: str) -> dict:
    return next(r for r in result["table"] if r["key"] == key)


def write(tmp_path: Path, result: dict) -> Path:
    path = tmp_path / "latest.json"
    path.write_text(json.dumps(result))
    return path


def test_a_run_without_the_floors_and_the_peer_leaves_inspect_and_the_grants_unjudged(tmp_path, recorded, capsys):
    """The recorded run predates the floors and the peer: inspect and the grants have nothing to be held to."""
    assert cli.main(["--check", str(write(tmp_path, recorded))]) == 1
    out = capsys.readouterr().out
    missed = {line.strip() for line in out.splitlines() if "NOT MET" in line}
    assert missed == {
        "NOT MET  inspect, bearer header >= 0.9 x roundtrip: not measured",
        "NOT MET  inspect, X-API-Key >= 0.9 x roundtrip: not measured",
        "NOT MET  code flow (per request) >= 0.8 x twin_code_flow: not measured",
        "NOT MET  refresh grant >= 0.8 x twin_refresh: not measured",
        "NOT MET  client credentials >= 0.8 x twin_client_credentials: not measured",
        "NOT MET  inspect, bearer header >= 4.0 x dot_inspect: not measured",
        "NOT MET  code flow (per request) >= 1.5 x dot_code_flow: not measured",
        "NOT MET  refresh grant >= 1.5 x dot_refresh: not measured",
        "NOT MET  client credentials >= 1.5 x dot_client_credentials: not measured",
        "NOT MET  ID token's extra CPU per request <= 1.5 ms: 2.67 ms",
        "NOT MET  resident memory of a worker that served inspect only <= 80 MB: not measured",
        "NOT MET  resident memory of a worker that served every row <= bare route's + 45 MB: not measured",
        "NOT MET  inspect at the most domains >= 0.95 x the fewest: not measured",
        "NOT MET  sign-in POST at the most domains >= 0.95 x the fewest: not measured",
        "NOT MET  code flow at the most domains >= 0.95 x the fewest: not measured",
        "NOT MET  discovery at the most domains >= 0.95 x the fewest: not measured",
        "NOT MET  JWKS at the most domains >= 0.95 x the fewest: not measured",
        "NOT MET  the admin API's domain list at the most domains: p95 < 50 ms: not measured",
        "NOT MET  a domain's page in the console at the most domains: p95 < 50 ms: not measured",
        "NOT MET  a worker's start at the most domains <= 1.05 x the fewest: not measured",
        "NOT MET  a worker's memory at the most domains <= 1.05 x the fewest: not measured",
        "NOT MET  inspect's p99 during a purge <= 2.0 x without: not measured",
        "NOT MET  inspect at twice its sustained rate: measured: not measured",
        "NOT MET  token at twice its sustained rate: measured: not measured",
    }
    # Met in that run: 1M tokens at 0.99 of 10k, revocation immediate.
    assert "met      inspect at the most tokens >= 0.95 x inspect_bearer_10000: 0.993" in out
    assert "met      revocation immediate on every worker: immediate" in out
    assert "2 of 26 targets met" in out


def test_a_run_meeting_every_target_passes(tmp_path, recorded, capsys):
    assert cli.main(["--check", str(write(tmp_path, meeting_every_target(recorded)))]) == 0
    assert "32 of 32 targets met" in capsys.readouterr().out


def test_inspect_and_the_grants_are_held_to_their_floors_not_to_the_bare_route(tmp_path, recorded, capsys):
    """0.74 of the bare route is 0.925 of a round-trip floor at 0.8 of it: met; the grants at 0.1 of bare, too."""
    assert targets.check(write(tmp_path, meeting_every_target(recorded))) == 0
    out = capsys.readouterr().out
    assert "met      inspect, bearer header >= 0.9 x roundtrip: 0.925" in out
    assert "met      code flow (per request) >= 0.8 x twin_code_flow: 0.833" in out
    assert "met      refresh grant >= 0.8 x twin_refresh: 0.873" in out


@pytest.mark.parametrize(
    ("change", "missed"),
    [
        (lambda r: r["table"][4].update(rounds_rps=[479, 479, 479]), "code flow (per request)"),  # 0.798 of its twin
        (lambda r: r["table"][6].update(rounds_rps=[439, 439, 439]), "refresh grant"),  # 0.798 of its twin
        (lambda r: r["table"][8].update(rounds_rps=[479, 479, 479]), "client credentials"),  # 0.798 of its twin
        (lambda r: r["table"][3].update(rounds_rps=[3599, 3599, 3599]), "inspect, X-API-Key"),  # 0.8998 of 4000
        (lambda r: row(r, "dot_inspect").update(rounds_rps=[926, 926, 926]), "x dot_inspect"),  # 3.996 x
        (lambda r: row(r, "dot_client_credentials").update(rounds_rps=[334] * 3), "x dot_client_credentials"),  # 1.497
        (lambda r: r["table"][5].update(cpu_ms_per_request=3.51), "ID token's extra CPU"),  # 1.51 ms
        (lambda r: r["memory_roles"]["inspect only"][1].update(rss_mb=80.1), "served inspect only"),
        (lambda r: r["memory_roles"]["every row"][0].update(rss_mb=107.1), "served every row"),  # 62.0 + 45.1
        (lambda r: r["table"][2].update(rounds_rps=[3500, 3500, 3500]), "inspect at the most tokens"),  # 0.946
        (lambda r: r["revocation"].update(immediate=False), "revocation immediate"),
        (lambda r: row(r, "domains_jwks_10000").update(rounds_rps=[949] * 3), "JWKS at 10,000 domains"),  # 0.949
        (lambda r: r["domain_sets"]["10000"].update(start_s=2.11), "a worker's start"),  # 1.055 of 2.0
        (lambda r: row(r, "domains_console_10000").update(p95_ms=50.0), "page in the console"),
        (lambda r: row(r, "domains_admin_list_10000").update(p95_ms=51.0), "domain list"),
        (lambda r: r["domain_sets"]["10000"]["workers"][0].update(rss_mb=80.0), "a worker's memory"),  # 1.053
        (lambda r: r["purge_under_load"].update(p99_ms_during=8.1), "during a purge"),  # 2.025 x
        (lambda r: r["purge_under_load"].update(purge_overlapped_s=4.9), "during a purge"),  # over too soon
        (lambda r: overload(r, "inspect")["statuses"].update({"500": 1}), "inspect at twice"),
        (lambda r: overload(r, "token")["statuses"].update({"timeout": 3}), "token at twice"),
        (lambda r: overload(r, "token").update(without_retry_after=1), "503 with Retry-After"),
        (lambda r: overload(r, "inspect").update(served_p99_ms=1501.0), "p99 of the served <= 1500 ms"),
        (lambda r: overload(r, "token").update(recovery_s=5.1), "back to normal"),
        (lambda r: overload(r, "token").update(recovery_s=None), "back to normal"),
        (lambda r: overload(r, "inspect").update(offered_rps=3790.0), "offered >= 1.9"),
    ],
)
def test_one_missed_target_fails_the_check(tmp_path, recorded, capsys, change, missed):
    result = meeting_every_target(recorded)
    change(result)
    assert targets.check(write(tmp_path, result)) == 1
    [line] = [line for line in capsys.readouterr().out.splitlines() if "NOT MET" in line]
    assert missed in line


def test_the_ratio_is_the_median_of_the_rounds_not_the_totals(recorded):
    result = meeting_every_target(recorded)
    rows = {row["key"]: row for row in result["table"]}
    # A burst of other work slowed the bare route's second round: that round's pair still compares alike.
    rows["bare"]["rounds_rps"] = [5000, 2500, 5000]
    rows["device_poll"]["rounds_rps"] = [1600, 800, 1600]
    assert targets.ratio(rows, "device_poll", "bare") == pytest.approx(0.32)


def test_a_run_without_a_targets_rows_fails_as_not_measured(tmp_path, recorded, capsys):
    result = meeting_every_target(recorded)
    result["table"] = [row for row in result["table"] if row["key"] not in ("twin_refresh", "inspect_bearer_1000000")]
    assert targets.check(write(tmp_path, result)) == 1
    out = capsys.readouterr().out
    assert "NOT MET  refresh grant >= 0.8 x twin_refresh: not measured" in out
    assert "NOT MET  inspect at 10M tokens >= 0.95 x 10k: not measured" in out


def test_a_baseline_whose_requests_failed_judges_nothing(tmp_path, recorded, capsys):
    """A twin answering most refreshes 400 is fast for the wrong reason: the ratio to it is no measurement."""
    result = meeting_every_target(recorded)
    row(result, "twin_refresh").update(requests=4440, ok=1197, statuses={"200": 1197, "400": 3243})
    assert targets.check(write(tmp_path, result)) == 1
    out = capsys.readouterr().out
    assert "NOT MET  refresh grant >= 0.8 x twin_refresh: not measured: twin_refresh had failed requests" in out
    assert "NOT MET  refresh grant >= 1.5 x dot_refresh" not in out


def test_every_row_is_judged_against_the_bare_routes_worker_of_the_same_run(tmp_path, recorded, capsys):
    """A heavier stack (a bare worker at 70 MB) moves the bound with it: 114 MB is then within 45 MB."""
    result = meeting_every_target(recorded)
    result["memory_roles"]["bare route"] = [{"pid": 5, "rss_mb": 70.0}]
    result["memory_roles"]["every row"] = [{"pid": 3, "rss_mb": 114.0}]
    assert targets.check(write(tmp_path, result)) == 0
    assert "114.0 MB against 70.0 MB (+44.0)" in capsys.readouterr().out


def test_no_results_file_exits_2(tmp_path, capsys):
    assert cli.main(["--check", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().out
