"""Resource indicators (RFC 8707) and JWT access tokens (RFC 9068) against the real service (the Procfile's web
line under gunicorn), driven by Authlib's own client, as an API server would check the token it is sent."""

from __future__ import annotations

import secrets
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from authlib.integrations.base_client import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.helpers.servers import running_service

PASSWORD = "resource e2e password"
REDIRECT_URI = "http://127.0.0.1:9/callback"
ORDERS = "https://orders.example.com/api"
STOCK = "https://stock.example.com/"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    with running_service(tmp_path_factory.mktemp("instance")) as svc:
        svc.cli("domains", "create", "--name", "Resources", "--host", "127.0.0.1")
        svc.cli("users", "create", "--domain", "127.0.0.1", "--email", "person@example.com", "--password", PASSWORD)
        svc.app = svc.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Orders front end",
            "--redirect-uri",
            REDIRECT_URI,
            "--scopes",
            "public mqtt.read",
            "--access-token-format",
            "jwt",
            "--resource",
            ORDERS,
            "--resource",
            STOCK,
        )
        yield svc


def signin(service) -> str:
    response = requests.post(
        service.url + "/auth/signin", params={"email": "person@example.com", "password": PASSWORD}, timeout=10
    )
    assert response.status_code == 202
    return response.cookies["user"]


def verified_claims(service, token: str) -> dict:
    """What an API server does with a JWT access token: the keys from the metadata's jwks_uri, typ at+jwt."""
    metadata = requests.get(service.url + "/.well-known/oauth-authorization-server", timeout=10).json()
    keys = KeySet.import_key_set(requests.get(metadata["jwks_uri"], timeout=10).json())
    decoded = jwt.decode(token, keys, algorithms=["RS256"])
    assert decoded.header["typ"] == "at+jwt"
    assert decoded.claims["iss"] == metadata["issuer"]
    return decoded.claims


def inspect(service, token: str) -> requests.Response:
    return requests.get(
        service.url + "/api/engine/v2/api_keys/inspect", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )


def test_a_code_flow_for_two_resources_narrowed_at_the_token_endpoint(service):
    cookie = signin(service)
    client = OAuth2Session(
        client_id=service.app["client_id"],
        redirect_uri=REDIRECT_URI,
        scope="public mqtt.read",
        code_challenge_method="S256",
        token_endpoint_auth_method="none",
    )
    verifier = secrets.token_urlsafe(48)
    url, state = client.create_authorization_url(
        service.url + "/auth/oauth/authorize", code_verifier=verifier, resource=[ORDERS, STOCK]
    )
    response = requests.get(url, cookies={"user": cookie}, allow_redirects=False, timeout=10)
    assert response.status_code == 302, response.text
    token = client.fetch_token(
        service.url + "/auth/oauth/token",
        authorization_response=response.headers["Location"],
        code_verifier=verifier,
        state=state,
        resource=ORDERS,
    )
    claims = verified_claims(service, token["access_token"])
    assert claims["aud"] == ORDERS
    assert claims["client_id"] == service.app["client_id"]
    assert claims["scope"] == "public mqtt.read"
    assert inspect(service, token["access_token"]).json()["aud"] == ORDERS

    # A refresh may ask for the grant's other resource, and without one gets both back.
    stock = client.refresh_token(service.url + "/auth/oauth/token", resource=STOCK)
    assert verified_claims(service, stock["access_token"])["aud"] == STOCK
    both = client.refresh_token(service.url + "/auth/oauth/token")
    assert verified_claims(service, both["access_token"])["aud"] == [ORDERS, STOCK]

    # Anything else is invalid_target, and the refresh token stays good.
    with pytest.raises(OAuthError, match="invalid_target"):
        client.refresh_token(service.url + "/auth/oauth/token", resource="https://elsewhere.example.com/")
    after = client.refresh_token(service.url + "/auth/oauth/token")
    assert verified_claims(service, after["access_token"])["aud"] == [ORDERS, STOCK]

    # Revoked, the JWT still verifies but the service refuses it at once.
    revoked = client.revoke_token(service.url + "/auth/oauth/revoke", after["access_token"])
    assert revoked.status_code == 200
    assert verified_claims(service, after["access_token"])
    assert inspect(service, after["access_token"]).status_code == 401


def test_an_unlisted_resource_at_authorize_comes_back_as_invalid_target(service):
    cookie = signin(service)
    client = OAuth2Session(
        client_id=service.app["client_id"],
        redirect_uri=REDIRECT_URI,
        scope="public",
        code_challenge_method="S256",
        token_endpoint_auth_method="none",
    )
    verifier = secrets.token_urlsafe(48)
    url, state = client.create_authorization_url(
        service.url + "/auth/oauth/authorize", code_verifier=verifier, resource="https://elsewhere.example.com/"
    )
    response = requests.get(url, cookies={"user": cookie}, allow_redirects=False, timeout=10)
    assert response.status_code == 302
    location = urlsplit(response.headers["Location"])
    assert location._replace(query="").geturl() == REDIRECT_URI
    answer = parse_qs(location.query)
    assert answer["error"] == ["invalid_target"]
    assert answer["state"] == [state]
    assert "code" not in answer
