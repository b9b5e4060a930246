"""The spec's flows against the real service: the Procfile's web line under gunicorn, over HTTP.

Real clients drive it: Authlib's OAuth2Session (code flow with PKCE S256)
and requests-oauthlib's LegacyApplicationClient (password grant).
"""

from __future__ import annotations

import secrets
import subprocess
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from oauthlib.oauth2 import LegacyApplicationClient
from requests_oauthlib import OAuth2Session as OAuthlibSession

from tests.helpers import BACKEND
from tests.helpers.seeded_service import PASSWORD, inspect_each_way, password_token, seed, signin
from tests.helpers.servers import running_service

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    with running_service(tmp_path_factory.mktemp("instance")) as svc:
        seed(svc)
        yield svc


def test_password_grant_with_requests_oauthlib(service, monkeypatch):
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")  # plain http to loopback in this test only
    client_id = service.app["client_id"]
    session = OAuthlibSession(client=LegacyApplicationClient(client_id=client_id))
    token = session.fetch_token(
        service.url + "/auth/oauth/token",
        username="robot@example.com",
        password=PASSWORD,
        client_id=client_id,
        include_client_id=True,
        scope=["public", "mqtt.read"],
    )
    assert token["token_type"] == "bearer"
    assert token["scope"] == ["public", "mqtt.read"]
    for claims in inspect_each_way(service, token["access_token"]):
        assert claims["u"]["e"] == "robot@example.com"
        assert claims["client_id"] == client_id


def test_password_grant_as_the_spec_shows_it_json_body(service):
    response = requests.post(
        service.url + "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "robot@example.com",
            "password": PASSWORD,
            "client_id": service.app["client_id"],
        },
        timeout=10,
    )
    assert response.status_code == 200
    assert response.json()["scope"] == "public"
    assert response.headers["Cache-Control"] == "no-store"


def test_code_flow_with_pkce_using_authlibs_client(service):
    cookie = signin(service)
    client = OAuth2Session(
        client_id=service.app["client_id"],
        redirect_uri="http://127.0.0.1:9/callback",
        scope="public mqtt.read",
        code_challenge_method="S256",
        token_endpoint_auth_method="none",
    )
    verifier = secrets.token_urlsafe(48)
    url, state = client.create_authorization_url(service.url + "/auth/oauth/authorize", code_verifier=verifier)
    response = requests.get(url, cookies={"user": cookie}, allow_redirects=False, timeout=10)
    assert response.status_code == 302
    token = client.fetch_token(
        service.url + "/auth/oauth/token",
        authorization_response=response.headers["Location"],
        code_verifier=verifier,
        state=state,
    )
    assert token["scope"] == "public mqtt.read"
    for claims in inspect_each_way(service, token["access_token"]):
        assert claims["u"]["e"] == "person@example.com"
    refreshed = client.refresh_token(service.url + "/auth/oauth/token")
    assert refreshed["refresh_token"] != token["refresh_token"]
    inspect_each_way(service, refreshed["access_token"])


def test_the_specs_code_flow_step_by_step(service):
    """docs/platform.md: sign in, take the cookie, authorise with it, exchange with everything in the query string."""
    cookie = signin(service)
    redirect_uri = "http://127.0.0.1:9/callback"
    response = requests.get(
        service.url + "/auth/oauth/authorize",
        params={
            "response_type": "code",
            "scope": "public",
            "client_id": service.app["client_id"],
            "redirect_uri": redirect_uri,
        },
        headers={"Cookie": f"user={cookie}"},
        allow_redirects=False,
        timeout=10,
    )
    assert response.status_code == 302
    code = parse_qs(urlsplit(response.headers["Location"]).query)["code"][0]
    token = requests.post(
        service.url + "/auth/oauth/token",
        params={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": service.app["client_id"],
            "redirect_uri": redirect_uri,
        },
        timeout=10,
    )
    assert token.status_code == 200
    assert set(token.json()) == {"access_token", "token_type", "expires_in", "refresh_token", "scope", "created_at"}
    inspect_each_way(service, token.json()["access_token"])


def test_an_api_key_in_the_query_parameter(service):
    response = requests.get(
        service.url + "/api/engine/v2/api_keys/inspect", params={"api-key": service.key["key"]}, timeout=10
    )
    assert response.status_code == 200
    assert response.json()["api_key"] == service.key["id"]


def test_sessions_and_codes_are_shared_by_every_worker(service):
    # Several requests land on different workers; each must see the session
    # and each code must be exchangeable wherever the exchange lands.
    cookie = signin(service)
    for _ in range(6):
        response = requests.get(
            service.url + "/auth/oauth/authorize",
            params={
                "response_type": "code",
                "client_id": service.app["client_id"],
                "redirect_uri": "http://127.0.0.1:9/callback",
            },
            cookies={"user": cookie},
            allow_redirects=False,
            timeout=10,
        )
        assert response.status_code == 302
        code = parse_qs(urlsplit(response.headers["Location"]).query)["code"][0]
        token = requests.post(
            service.url + "/auth/oauth/token",
            params={
                "grant_type": "authorization_code",
                "code": code,
                "client_id": service.app["client_id"],
                "redirect_uri": "http://127.0.0.1:9/callback",
            },
            timeout=10,
        )
        assert token.status_code == 200


def test_errors_over_http_are_json_without_traces(service):
    response = requests.post(
        service.url + "/auth/oauth/token", data=b"{broken", timeout=10, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "Traceback" not in response.text


def test_the_web_line_runs_the_workers_it_is_told(service):
    workers = subprocess.run(["pgrep", "-P", str(service.process.pid)], capture_output=True, text=True).stdout.split()
    # WEB_CONCURRENCY=2; the embedded store serves one process, so without
    # REDIS_URL the settings run a single (threaded) worker instead.
    assert len(workers) == (2 if BACKEND == "postgresql" else 1)


def test_a_revoked_token_is_refused_by_every_worker(service):
    token = password_token(service)
    inspect_each_way(service, token["access_token"])
    response = requests.post(
        service.url + "/auth/oauth/revoke",
        data={"token": token["access_token"], "client_id": service.app["client_id"]},
        timeout=10,
    )
    assert response.status_code == 200
    # Fresh connections spread over both workers; none may still accept it.
    url = service.url + "/api/engine/v2/api_keys/inspect"
    answers = [
        requests.get(url, headers={"Authorization": f"Bearer {token['access_token']}"}, timeout=10).status_code
        for _ in range(12)
    ]
    assert answers == [401] * 12


def test_a_client_configured_only_from_the_metadata_completes_the_code_flow(service):
    """Authlib's Flask client, given the metadata URL and its own client_id, and nothing else of the server."""
    from authlib.integrations.flask_client import OAuth
    from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
    from flask import Flask, jsonify

    metadata_url = service.url + "/.well-known/oauth-authorization-server"
    metadata = requests.get(metadata_url, timeout=10).json()
    AuthorizationServerMetadata(metadata).validate()
    assert metadata["issuer"] == service.url

    relying_party = Flask("relying_party")
    relying_party.secret_key = secrets.token_urlsafe(16)
    oauth = OAuth(relying_party)
    oauth.register(
        "authsvc",
        client_id=service.app["client_id"],
        server_metadata_url=metadata_url,
        client_kwargs={"scope": "public mqtt.read", "code_challenge_method": "S256"},
    )
    callback = "http://127.0.0.1:9/callback"

    @relying_party.get("/login")
    def login():
        return oauth.authsvc.authorize_redirect(callback)

    @relying_party.get("/callback")
    def callback_view():
        return jsonify(oauth.authsvc.authorize_access_token())

    browser = relying_party.test_client()
    to_server = browser.get("/login")
    assert to_server.status_code == 302
    assert to_server.headers["Location"].startswith(metadata["authorization_endpoint"] + "?")
    # The user, signed in at the service, is sent back with a code.
    back = requests.get(
        to_server.headers["Location"], cookies={"user": signin(service)}, allow_redirects=False, timeout=10
    )
    assert back.status_code == 302
    assert back.headers["Location"].startswith(callback + "?")
    token = browser.get("/callback?" + urlsplit(back.headers["Location"]).query).get_json()
    assert token["scope"] == "public mqtt.read"
    inspect_each_way(service, token["access_token"])

    # The revocation endpoint it learnt from the metadata ends the grant.
    session = OAuth2Session(client_id=service.app["client_id"], token_endpoint_auth_method="none")
    assert session.revoke_token(metadata["revocation_endpoint"], token["refresh_token"]).status_code == 200
    url = service.url + "/api/engine/v2/api_keys/inspect"
    response = requests.get(url, headers={"Authorization": f"Bearer {token['access_token']}"}, timeout=10)
    assert response.status_code == 401


def test_introspection_and_purge_over_the_real_service(service):
    resource_server = service.cli(
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
    token = password_token(service)
    introspect = service.url + "/auth/oauth/introspect"
    auth = (resource_server["client_id"], resource_server["client_secret"])
    active = requests.post(introspect, data={"token": token["access_token"]}, auth=auth, timeout=10).json()
    assert active["active"] is True
    assert active["username"] == "robot@example.com"
    requests.post(
        service.url + "/auth/oauth/revoke",
        data={"token": token["refresh_token"], "client_id": service.app["client_id"]},
        timeout=10,
    )
    assert requests.post(introspect, data={"token": token["access_token"]}, auth=auth, timeout=10).json() == {
        "active": False
    }
    # A purge takes rows revoked before the current second (seconds are the stored clock): the in-process
    # CLI runs within the second of the revocation, so let that second end first (at most 1 s).
    next_second = int(time.time()) + 1
    while time.time() < next_second:
        time.sleep(0.05)
    purged = service.cli("tokens", "purge")
    assert purged["revoked"] >= 1


def test_oversized_header_and_request_lines_are_refused_before_the_app(service):
    big_header = requests.get(service.url + "/healthz", headers={"X-Big": "a" * 9000}, timeout=10)
    many_headers = requests.get(service.url + "/healthz", headers={f"X-H{i}": "1" for i in range(120)}, timeout=10)
    long_line = requests.get(service.url + "/healthz?" + "a" * 9000, timeout=10)
    assert big_header.status_code in (400, 431)
    assert many_headers.status_code in (400, 431)
    assert long_line.status_code in (400, 414)
    for response in (big_header, many_headers, long_line):
        assert "Traceback" not in response.text


# Headers a client on a loopback peer (a process on the same machine, or a proxy that passes them on)
# may send to claim https or another path: gunicorn's defaults believed the first three from
# 127.0.0.1; SCRIPT_NAME and PATH_INFO are headers gunicorn can map into the WSGI environment.
CLAIMED_BY_THE_PEER = [
    {"X-Forwarded-Proto": "https"},
    {"X-Forwarded-Protocol": "ssl"},
    {"X-Forwarded-Ssl": "on"},
    {"X-Forwarded-Proto": "https", "X-Forwarded-Protocol": "ssl", "X-Forwarded-Ssl": "on"},
    {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example", "X-Forwarded-Port": "443"},
    {"Forwarded": "proto=https;host=evil.example"},
    {"X-Forwarded-Scheme": "https"},
    {"X-Scheme": "https"},
    {"X-Url-Scheme": "https"},
    {"Front-End-Https": "on"},
    {"SCRIPT_NAME": "/.well-known"},
    {"PATH_INFO": "/healthz"},
]


def test_without_proxy_hops_no_forwarded_header_changes_scheme_or_urls(service):
    """AUTHSVC_PROXY_HOPS=0 (the fixture's): the headers are believed from no peer, loopback included.

    Otherwise anyone who reaches the port directly is https: the issuer and every URL in the metadata
    turn https, and a token request over plain http passes the transport check (docs/deployment.md).
    """
    host = "proxy-e2e.example"
    service.cli("domains", "create", "--name", "Proxy", "--host", host)
    metadata_url = service.url + "/.well-known/oauth-authorization-server"
    plain = requests.get(metadata_url, timeout=10).json()
    assert plain["issuer"] == service.url
    token_request = {"grant_type": "client_credentials", "client_id": "nobody", "client_secret": "x"}
    refused = requests.post(service.url + "/auth/oauth/token", data=token_request, headers={"Host": host}, timeout=10)
    assert refused.json()["error"] == "insecure_transport"
    for claimed in CLAIMED_BY_THE_PEER:
        metadata = requests.get(metadata_url, headers=claimed, timeout=10)
        assert metadata.status_code == 200, (claimed, metadata.text)
        assert metadata.json() == plain, claimed
        assert "Strict-Transport-Security" not in metadata.headers, claimed
        token = requests.post(
            service.url + "/auth/oauth/token", data=token_request, headers={"Host": host, **claimed}, timeout=10
        )
        assert token.json()["error"] == "insecure_transport", (claimed, token.text)
