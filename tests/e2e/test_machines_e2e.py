"""Machine-to-machine grants against the real service (the Procfile's web line under gunicorn): machine clients
with Authlib's own client, presenting their tokens to inspect as a resource server does."""

from __future__ import annotations

import time

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from joserfc.jwk import ECKey, RSAKey

from tests.helpers.key_server import KeyServer
from tests.helpers.servers import running_service

PASSWORD = "service account password"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    # The applications' JWKS servers run on loopback, as the SSO tests' providers do.
    allow_loopback_keys = {"AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS": "true", "AUTHSVC_CLIENT_JWKS_TIMEOUT": "1"}
    with running_service(tmp_path_factory.mktemp("instance"), **allow_loopback_keys) as svc:
        svc.cli("domains", "create", "--name", "Machines", "--host", "127.0.0.1")
        svc.cli(
            "users",
            "create",
            "--domain",
            "127.0.0.1",
            "--email",
            "robot@example.com",
            "--password",
            PASSWORD,
            "--service-account",
            "--name",
            "Robot",
        )
        svc.app = svc.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Machine",
            "--confidential",
            "--service-account",
            "robot@example.com",
            "--scopes",
            "public mqtt.read",
        )
        yield svc


def inspect(service, access_token: str) -> dict:
    response = requests.get(
        service.url + "/api/engine/v2/api_keys/inspect", headers={"Authorization": f"Bearer {access_token}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("auth_method", ["client_secret_basic", "client_secret_post"])
def test_client_credentials_with_authlibs_client(service, monkeypatch, auth_method):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")  # plain http to loopback in this test only
    session = OAuth2Session(
        service.app["client_id"],
        service.app["client_secret"],
        scope="mqtt.read",
        token_endpoint_auth_method=auth_method,
    )
    token = session.fetch_token(service.url + "/auth/oauth/token", grant_type="client_credentials")
    assert token["token_type"] == "bearer"
    assert token["scope"] == "mqtt.read"
    assert "refresh_token" not in token
    claims = inspect(service, token["access_token"])
    assert claims["u"]["e"] == "robot@example.com"
    assert claims["client_id"] == service.app["client_id"]
    assert claims["scope"] == ["mqtt.read"]


def test_a_wrong_secret_gets_no_token(service, monkeypatch):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    session = OAuth2Session(service.app["client_id"], "wrong secret")
    with pytest.raises(Exception, match="invalid_client"):
        session.fetch_token(service.url + "/auth/oauth/token", grant_type="client_credentials")


def keyed_app(service, key_server: KeyServer) -> dict:
    return service.cli(
        "apps",
        "create",
        "--domain",
        "127.0.0.1",
        "--name",
        "Keyed machine",
        "--service-account",
        "robot@example.com",
        "--scopes",
        "public mqtt.read",
        "--jwks-uri",
        key_server.url,
    )


def keyed_session(service, client_id: str, key, alg: str = "RS256") -> OAuth2Session:
    session = OAuth2Session(
        client_id,
        key,
        scope="mqtt.read",
        token_endpoint_auth_method="private_key_jwt",
        revocation_endpoint_auth_method="private_key_jwt",
    )
    session.register_client_auth_method(PrivateKeyJWT(service.url + "/auth/oauth/token", alg=alg))
    return session


def test_private_key_jwt_with_authlibs_client_and_a_jwks_uri(service, monkeypatch, key_server):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    key = RSAKey.generate_key(2048, parameters={"kid": "one"})
    key_server.serve(key)
    app = keyed_app(service, key_server)
    assert "client_secret" not in app
    session = keyed_session(service, app["client_id"], key)
    token = session.fetch_token(service.url + "/auth/oauth/token", grant_type="client_credentials")
    assert "refresh_token" not in token
    claims = inspect(service, token["access_token"])
    assert claims["u"]["e"] == "robot@example.com"
    assert claims["client_id"] == app["client_id"]
    # Introspection and revocation take an assertion too.
    assert session.introspect_token(service.url + "/auth/oauth/introspect", token["access_token"]).json()["active"]
    revoked = session.revoke_token(service.url + "/auth/oauth/revoke", token["access_token"])
    assert revoked.status_code == 200, revoked.text
    answer = session.introspect_token(service.url + "/auth/oauth/introspect", token["access_token"]).json()
    assert answer == {"active": False}
    # The keys were fetched once and shared by both workers since (kept a while, in Redis).
    assert key_server.fetches == 1


def test_a_rotated_key_is_found_by_refetching_once(service, monkeypatch, key_server):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    old, new = (
        RSAKey.generate_key(2048, parameters={"kid": "old"}),
        ECKey.generate_key("P-256", parameters={"kid": "new"}),
    )
    key_server.serve(old)
    app = keyed_app(service, key_server)
    keyed_session(service, app["client_id"], old).fetch_token(
        service.url + "/auth/oauth/token", grant_type="client_credentials"
    )
    key_server.serve(old, new)
    token = keyed_session(service, app["client_id"], new, "ES256").fetch_token(
        service.url + "/auth/oauth/token", grant_type="client_credentials"
    )
    assert inspect(service, token["access_token"])["client_id"] == app["client_id"]
    assert key_server.fetches == 2
    # A kid nobody serves: refused, without another fetch so soon (one refetch an interval).
    stranger = RSAKey.generate_key(2048, parameters={"kid": "stranger"})
    with pytest.raises(Exception, match="invalid_client"):
        keyed_session(service, app["client_id"], stranger).fetch_token(
            service.url + "/auth/oauth/token", grant_type="client_credentials"
        )
    assert key_server.fetches == 2


def test_a_hanging_jwks_uri_is_invalid_client_within_the_timeout(service, monkeypatch, key_server):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    key = RSAKey.generate_key(2048, parameters={"kid": "one"})
    key_server.serve(key)
    key_server.hang = True
    app = keyed_app(service, key_server)
    session = keyed_session(service, app["client_id"], key)
    started = time.monotonic()
    with pytest.raises(Exception, match="jwks_uri could not be fetched"):
        session.fetch_token(service.url + "/auth/oauth/token", grant_type="client_credentials")
    assert time.monotonic() - started < 2.9  # the service's timeout (1 s here), not the key server's 3 s hang


def test_a_keyed_application_cannot_use_a_secret(service, monkeypatch, key_server):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    key_server.serve(RSAKey.generate_key(2048, parameters={"kid": "one"}))
    app = keyed_app(service, key_server)
    session = OAuth2Session(app["client_id"], "a guess")
    with pytest.raises(Exception, match="invalid_client"):
        session.fetch_token(service.url + "/auth/oauth/token", grant_type="client_credentials")
