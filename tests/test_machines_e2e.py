"""Issue 16 against the real service (the Procfile's web line under gunicorn): machine clients
with Authlib's own client, presenting their tokens to inspect as a resource server does."""

from __future__ import annotations

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session

from tests.servers import running_service

PASSWORD = "service account password"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    with running_service(tmp_path_factory.mktemp("instance")) as svc:
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
