"""Pushed authorisation requests and request objects against the real service (gunicorn), with clients nobody
here wrote.

- panva's openid-client (tests/rp/par.mjs): ``buildAuthorizationUrlWithPAR`` with a secret, then with
  ``private_key_jwt`` and a pushed request object (``buildAuthorizationUrlWithJAR``) for an application
  that must push; the browser carries only client_id and request_uri, which works once.
- Authlib's client: its ``PrivateKeyJWT`` authenticates the push (aud = the PAR endpoint), joserfc
  signs the request object, ``OAuth2Session`` exchanges the code.
"""

from __future__ import annotations

import json
import time

import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.jwk import ECKey

from tests.helpers.relying_party import REDIRECT_URI, run_harness, seed_domain
from tests.helpers.servers import running_service

pytestmark = pytest.mark.slow

PASSWORD = "pushed requests password"
SCOPES = "openid email"
KEY = ECKey.generate_key("P-256", parameters={"kid": "e2e-1"})


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    instance = tmp_path_factory.mktemp("instance")
    jwks_file = instance / "jwks.json"
    jwks_file.write_text(json.dumps({"keys": [KEY.as_dict(private=False)]}))
    with running_service(instance) as svc:
        seed_domain(svc, PASSWORD, SCOPES, "--name", "PAR")
        common = ["--domain", "127.0.0.1", "--redirect-uri", REDIRECT_URI, "--scopes", SCOPES, "--require-pkce"]
        svc.secret_app = svc.cli("apps", "create", "--name", "Secret", "--confidential", *common)
        svc.keyed_app = svc.cli(
            "apps", "create", "--name", "Keyed", "--jwks-file", str(jwks_file), "--require-par", *common
        )
        svc.instance = instance
        yield svc


def run_par(command, service, app, *extra) -> dict:
    return run_harness(command, "par.mjs", service, app, PASSWORD, *extra)


def check_flow(steps: dict, service) -> None:
    assert steps["discovery"]["par"] == f"{service.url}/auth/oauth/par"
    assert steps["par"]["query"] == ["client_id", "request_uri"]
    assert steps["par"]["request_uri"].startswith("urn:ietf:params:oauth:request_uri:")
    assert steps["token"]["claims"]["email"] == "alice@example.com"
    assert steps["replay"]["status"] == 400
    assert steps["replay"]["body"]["error"] == "invalid_request_uri"


def test_openid_client_pushes_with_a_secret(openid_client, service):  # noqa: F811 - the fixture
    steps = run_par(
        openid_client, service, service.secret_app, f"--client-secret={service.secret_app['client_secret']}"
    )
    check_flow(steps, service)


def test_openid_client_pushes_a_signed_request_object_with_private_key_jwt(openid_client, service):  # noqa: F811
    key_file = service.instance / "private.jwk"
    key_file.write_text(json.dumps(KEY.as_dict(private=True)))
    steps = run_par(openid_client, service, service.keyed_app, f"--jwk-file={key_file}")
    assert sorted(steps["jar"]["parameters"]) == ["client_id", "request"]
    check_flow(steps, service)


def test_an_application_that_must_push_is_refused_a_query_request(service):
    query = {"response_type": "code", "client_id": service.keyed_app["client_id"], "redirect_uri": REDIRECT_URI}
    response = requests.get(service.url + "/auth/oauth/authorize", params=query, timeout=10, allow_redirects=False)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_authlibs_client_authenticates_the_push_and_exchanges_the_code(service, monkeypatch):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")  # plain http to loopback in this test only
    client_id = service.keyed_app["client_id"]
    session = OAuth2Session(client_id, KEY, token_endpoint_auth_method="private_key_jwt", scope=SCOPES)
    # No token endpoint given: each assertion names the URL it is sent to as its aud (here, PAR's).
    session.register_client_auth_method(PrivateKeyJWT(alg="ES256"))
    verifier = generate_token(64)
    now = int(time.time())
    request_object = jwt.encode(
        {"alg": "ES256", "kid": KEY.kid, "typ": "oauth-authz-req+jwt"},
        {
            "iss": client_id,
            "aud": service.url,
            "client_id": client_id,
            "exp": now + 120,
            "nbf": now,
            "response_type": "code",
            "redirect_uri": REDIRECT_URI,
            "scope": SCOPES,
            "state": "authlib-state",
            "code_challenge": create_s256_code_challenge(verifier),
            "code_challenge_method": "S256",
        },
        KEY,
    )
    pushed = session.post(
        service.url + "/auth/oauth/par",
        data={"request": request_object},
        auth=session.client_auth("private_key_jwt"),
        withhold_token=True,
        timeout=10,
    )
    assert pushed.status_code == 201, pushed.text
    signin = requests.post(
        service.url + "/auth/signin", data={"email": "alice@example.com", "password": PASSWORD}, timeout=10
    )
    answer = requests.get(
        service.url + "/auth/oauth/authorize",
        params={"client_id": client_id, "request_uri": pushed.json()["request_uri"]},
        cookies={"user": signin.cookies["user"]},
        allow_redirects=False,
        timeout=10,
    )
    assert answer.status_code == 302, answer.text
    token = session.fetch_token(
        service.url + "/auth/oauth/token",
        authorization_response=answer.headers["Location"],
        redirect_uri=REDIRECT_URI,
        code_verifier=verifier,
        state="authlib-state",
    )
    assert token["scope"] == SCOPES
    assert "id_token" in token
