"""Observability of the real service under gunicorn: metrics that add up across workers, and logs (the
application's and the access log) that hold no secret."""

from __future__ import annotations

import base64
import json
import socket
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import BACKEND
from tests.helpers.servers import running_service


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    with running_service(tmp_path_factory.mktemp("instance"), AUTHSVC_LOG_LEVEL="DEBUG") as svc:
        svc.cli("domains", "create", "--name", "Obs", "--host", "127.0.0.1")
        svc.app = svc.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Obs app",
            "--redirect-uri",
            "http://127.0.0.1:9/callback",
            "--scopes",
            "public mqtt.read",
            "--no-require-pkce",
        )
        svc.confidential = svc.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Resource server",
            "--redirect-uri",
            "http://127.0.0.1:9/rs",
            "--confidential",
            "--introspect",
        )
        svc.passwords = {"robot@example.com": "robot's password 1", "person@example.com": "person's password 2"}
        svc.cli(
            "users",
            "create",
            "--domain",
            "127.0.0.1",
            "--email",
            "robot@example.com",
            "--password",
            svc.passwords["robot@example.com"],
            "--service-account",
        )
        svc.cli(
            "users",
            "create",
            "--domain",
            "127.0.0.1",
            "--email",
            "person@example.com",
            "--password",
            svc.passwords["person@example.com"],
        )
        svc.key = svc.cli("api-keys", "create", "--domain", "127.0.0.1", "--user", "person@example.com", "--name", "o")
        yield svc


def request_counts(service) -> tuple[float, dict]:
    text = requests.get(service.url + "/metrics", timeout=10).text
    families = {family.name: family for family in text_string_to_metric_families(text)}
    total = sum(s.value for s in families["authsvc_http_requests"].samples if s.name.endswith("_total"))
    return total, families


def sample(families, name, **labels) -> float:
    if name not in families:
        return 0
    return sum(
        s.value
        for s in families[name].samples
        if s.name.endswith("_total") and all(s.labels.get(k) == v for k, v in labels.items())
    )


def healthz_workers(service) -> set[int]:
    """The worker processes that have logged a /healthz request."""
    return {
        line["process"] for line in map(json.loads, service.output().splitlines()) if line.get("path") == "/healthz"
    }


def test_metrics_add_up_across_the_workers(service):
    before, families_before = request_counts(service)
    workers = 2 if BACKEND == "postgresql" else 1
    sent = 0
    # With Redis there are two sync workers, each serving one connection at a
    # time. Hold one on a half-sent request: the kernel must then hand every new
    # connection to the other, so both answer /healthz whatever the scheduler does.
    port = int(service.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as held:
        held.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.5)  # let a worker accept it before the others arrive
        for _ in range(10):
            assert requests.get(service.url + "/healthz", timeout=10).status_code == 200
            sent += 1
        held.sendall(b"Connection: close\r\n\r\n")
        assert held.makefile("rb").readline().split()[1] == b"200"
        sent += 1
    for _ in range(4):
        response = requests.post(
            service.url + "/auth/oauth/token",
            json={
                "grant_type": "password",
                "username": "robot@example.com",
                "password": service.passwords["robot@example.com"],
                "client_id": service.app["client_id"],
            },
            timeout=10,
        )
        assert response.status_code == 200
        sent += 1
    for _ in range(6):
        # Unknown accounts lock out too: five failures, then a 429.
        requests.post(service.url + "/auth/signin", json={"email": "ghost@example.com", "password": "x"}, timeout=10)
        sent += 1
    after, families = request_counts(service)
    # The first scrape counts itself once it has answered.
    assert after - before == sent + 1
    tokens = sample(families, "authsvc_tokens_issued", grant_type="password")
    assert tokens - sample(families_before, "authsvc_tokens_issued", grant_type="password") == 4
    assert sample(families, "authsvc_signin_failures", via="signin") >= 5
    assert sample(families, "authsvc_rate_limited", reason="lockout") >= 1
    assert sample(families, "authsvc_http_requests", endpoint="health.healthz", status="200") >= 10
    histogram = families["authsvc_http_request_duration_seconds"]
    assert any(s.name.endswith("_count") and s.value >= 10 for s in histogram.samples)
    assert len(healthz_workers(service)) == workers


def test_the_logs_of_a_full_flow_hold_no_secret(service):
    """Every flow, at DEBUG, then a scan of the service's whole output for every secret used."""
    url, client_id = service.url, service.app["client_id"]
    inspect = url + "/api/engine/v2/api_keys/inspect"
    robot, person = "robot@example.com", "person@example.com"
    key = service.key["key"]
    secrets = [
        service.passwords[robot],
        service.passwords[person],
        key,
        key.split(".", 1)[1],
        service.confidential["client_secret"],
        "wrong password 3",
    ]

    grant = requests.post(
        url + "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": robot,
            "password": service.passwords[robot],
            "client_id": client_id,
        },
        timeout=10,
    ).json()
    secrets += [grant["access_token"], grant["refresh_token"]]
    assert (
        requests.post(
            url + "/auth/signin", params={"email": person, "password": "wrong password 3"}, timeout=10
        ).status_code
        == 401
    )
    signed_in = requests.post(
        url + "/auth/signin", params={"email": person, "password": service.passwords[person]}, timeout=10
    )
    cookie = signed_in.cookies["user"]
    secrets.append(cookie)
    redirect_uri = "http://127.0.0.1:9/callback"
    authorised = requests.get(
        url + "/auth/oauth/authorize",
        params={"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "s"},
        cookies={"user": cookie},
        allow_redirects=False,
        timeout=10,
    )
    code = parse_qs(urlsplit(authorised.headers["Location"]).query)["code"][0]
    secrets.append(code)
    token = requests.post(
        url + "/auth/oauth/token",
        params={"grant_type": "authorization_code", "code": code, "client_id": client_id, "redirect_uri": redirect_uri},
        timeout=10,
    ).json()
    secrets += [token["access_token"], token["refresh_token"]]
    refreshed = requests.post(
        url + "/auth/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": token["refresh_token"], "client_id": client_id},
        timeout=10,
    ).json()
    secrets += [refreshed["access_token"], refreshed["refresh_token"]]
    access = refreshed["access_token"]
    assert requests.get(inspect, headers={"Authorization": f"Bearer {access}"}, timeout=10).status_code == 200
    assert requests.get(inspect, params={"bearer_token": access}, timeout=10).status_code == 200
    assert requests.get(inspect, cookies={"bearer_token": access}, timeout=10).status_code == 200
    assert requests.get(inspect, params={"api-key": service.key["key"]}, timeout=10).status_code == 200
    assert requests.get(inspect, headers={"X-API-Key": service.key["key"]}, timeout=10).status_code == 200
    introspected = requests.post(
        url + "/auth/oauth/introspect",
        data={"token": access},
        auth=(service.confidential["client_id"], service.confidential["client_secret"]),
        timeout=10,
    )
    assert introspected.json()["active"] is True
    # Replays and reuse are logged as warnings: still without the values.
    requests.post(
        url + "/auth/oauth/token",
        params={"grant_type": "authorization_code", "code": code, "client_id": client_id, "redirect_uri": redirect_uri},
        timeout=10,
    )
    revoked = requests.post(
        url + "/auth/oauth/revoke", data={"token": grant["refresh_token"], "client_id": client_id}, timeout=10
    )
    assert revoked.status_code == 200
    requests.get(url + "/auth/logout", cookies={"user": cookie}, allow_redirects=False, timeout=10)

    output = service.output()
    leaked = [secret for secret in secrets if secret in output]
    assert leaked == [], "secrets in the logs"
    lines = output.splitlines()
    assert len(lines) > 50, "DEBUG logging of every flow"
    parsed = [json.loads(line) for line in lines]
    access_lines = [line for line in parsed if line["logger"] == "gunicorn.access"]
    assert {"/auth/oauth/token", "/auth/signin", "/auth/oauth/authorize"} <= {line["path"] for line in access_lines}
    assert all(len(line["request_id"]) == 32 for line in access_lines)
    in_requests = [line for line in parsed if line["logger"].startswith("authsvc") and line.get("request_id")]
    assert in_requests, "the app's own lines carry the request id"


def test_nonce_sid_and_id_tokens_never_reach_the_logs_of_an_openid_connect_flow(service):
    """No nonce, sid or ID token of an OpenID Connect flow at DEBUG (ID token, refresh, UserInfo,
    id_token_hint) reaches the logs: the flow, then a scan."""
    url = service.url
    service.cli("domains", "scopes", "add", "--domain", "127.0.0.1", "openid", "email")
    redirect_uri = "http://127.0.0.1:9/oidc"
    rp = service.cli(
        "apps",
        "create",
        "--domain",
        "127.0.0.1",
        "--name",
        "OIDC RP",
        "--redirect-uri",
        redirect_uri,
        "--scopes",
        "openid email",
        "--confidential",
        "--no-require-pkce",
    )
    person = "person@example.com"
    nonce = "nonce-" + "7" * 24
    cookie = requests.post(
        url + "/auth/signin", params={"email": person, "password": service.passwords[person]}, timeout=10
    ).cookies["user"]

    def authorise(**extra):
        params = {"response_type": "code", "client_id": rp["client_id"], "redirect_uri": redirect_uri, "state": "s"}
        answer = requests.get(
            url + "/auth/oauth/authorize",
            params={**params, "scope": "openid email", **extra},
            cookies={"user": cookie},
            allow_redirects=False,
            timeout=10,
        )
        assert answer.status_code == 302, answer.text
        return parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]

    def exchange(**form):
        answer = requests.post(
            url + "/auth/oauth/token", data=form, auth=(rp["client_id"], rp["client_secret"]), timeout=10
        )
        assert answer.status_code == 200, answer.text
        return answer.json()

    first = exchange(grant_type="authorization_code", code=authorise(nonce=nonce), redirect_uri=redirect_uri)
    claims = json.loads(base64.urlsafe_b64decode(first["id_token"].split(".")[1] + "=="))
    assert claims["nonce"] == nonce and claims["sid"]
    refreshed = exchange(grant_type="refresh_token", refresh_token=first["refresh_token"])
    userinfo = requests.get(
        url + "/auth/oauth/userinfo", headers={"Authorization": f"Bearer {refreshed['access_token']}"}, timeout=10
    )
    assert userinfo.status_code == 200
    # The ID token back as a hint, silently: a code, and again nothing of it in the logs.
    hinted = exchange(
        grant_type="authorization_code",
        code=authorise(prompt="none", id_token_hint=first["id_token"], max_age="3600"),
        redirect_uri=redirect_uri,
    )

    output = service.output()
    secrets = {
        "nonce": nonce,
        "sid": claims["sid"],
        "id_token": first["id_token"],
        "refreshed id_token": refreshed["id_token"],
        "hinted id_token": hinted["id_token"],
        "session cookie": cookie,
    }
    assert [name for name, value in secrets.items() if value in output] == [], "in the service's logs"
    # A token cut short in a log line escapes the whole-token search: look for each signature too.
    assert not any(token.rsplit(".", 1)[1] in output for token in (first["id_token"], hinted["id_token"]))


def test_an_access_log_line_has_exactly_the_safe_fields(service):
    """gunicorn's access record (authsvc.web.access_log): who, what, status, size, time, request id; nothing else."""
    url = service.url + "/api/engine/v2/api_keys/inspect"
    rid = f"access-line-{time.monotonic_ns()}"
    answer = requests.get(
        url,
        params={"api-key": "nope.secret-in-the-query"},
        headers={"X-Request-Id": rid, "User-Agent": "access-test/1", "Authorization": "Bearer abc"},
        timeout=10,
    )
    assert answer.status_code == 401
    deadline = time.monotonic() + 5
    while not (lines := [json.loads(line) for line in service.output().splitlines() if rid in line]):
        assert time.monotonic() < deadline, "no access line"
        time.sleep(0.05)
    (line,) = lines
    assert set(line) == {
        "ts", "level", "logger", "process", "message",
        "remote", "method", "path", "status", "bytes", "duration_ms", "user_agent", "request_id",
    }  # fmt: skip
    assert (line["logger"], line["message"], line["level"]) == ("gunicorn.access", "request", "info")
    assert (line["remote"], line["method"], line["path"], line["status"]) == (
        "127.0.0.1",
        "GET",
        url[len(service.url) :],
        401,
    )
    assert line["bytes"] == len(answer.content) and isinstance(line["duration_ms"], int)
    assert (line["user_agent"], line["request_id"]) == ("access-test/1", rid)
