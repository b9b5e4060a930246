"""A client nobody here wrote completes the FAPI 2.0 flows: panva's openid-client 6 as the client of a
``fapi2`` domain (docs/fapi.md), over HTTP
against gunicorn.

tests/e2e/rp/fapi.mjs, as a confidential application with ``private_key_jwt`` (ES256) in a domain made with
``domains create --profile fapi2``: PKCE S256, the request pushed (RFC 9126) with a DPoP proof that binds
the code (RFC 9449 10.1), the server's ``use_dpop_nonce`` answered by openid-client's own retry, a 303
authorisation response with ``iss``, the code exchanged with DPoP, UserInfo and inspect with DPoP, two
refreshes with the same key and the same refresh token (not rotated); then the refusals: the token as
Bearer, a proof for another URL, a replayed proof. (A public client's refresh with another key is
tests/e2e/test_dpop_openid_client.py's, outside the profile: the profile has no public clients.)
What the profile refuses of a client that skips PAR or DPoP is checked here too, with plain HTTP.
"""

from __future__ import annotations

import json
import secrets
import time

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import ECKey

from tests.helpers.relying_party import PASSWORD, REDIRECT_URI, SCOPES, run_harness, seed_domain
from tests.helpers.servers import running_service

pytestmark = pytest.mark.slow

KEY = ECKey.generate_key("P-256", parameters={"kid": "fapi-e2e-1"})
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    instance = tmp_path_factory.mktemp("instance")
    jwks_file = instance / "jwks.json"
    jwks_file.write_text(json.dumps({"keys": [KEY.as_dict(private=False)]}))
    with running_service(instance) as svc:
        seed_domain(svc, PASSWORD, SCOPES, "--name", "Bank", "--profile", "fapi2")
        svc.app = svc.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "FAPI RP",
            "--redirect-uri",
            REDIRECT_URI,
            "--scopes",
            SCOPES,
            "--jwks-file",
            str(jwks_file),
            "--require-pkce",
        )
        svc.instance = instance
        yield svc


def test_openid_client_runs_a_dpop_bound_code_flow_with_par_in_a_fapi2_domain(openid_client, service):  # noqa: F811
    key_file = service.instance / "private.jwk"
    key_file.write_text(json.dumps(KEY.as_dict(private=True)))
    steps = run_harness(
        openid_client,
        "fapi.mjs",
        service,
        service.app,
        PASSWORD,
        "--scope",
        "openid profile email",
        f"--jwk-file={key_file}",
    )
    discovery = steps["discovery"]
    assert discovery["require_pushed_authorization_requests"] is True
    assert discovery["token_endpoint_auth_methods_supported"] == ["private_key_jwt"]
    assert discovery["code_challenge_methods_supported"] == ["S256"]
    assert "RS256" not in discovery["dpop_signing_alg_values_supported"]
    # The push: use_dpop_nonce (400), then openid-client's retry with the nonce (201), each with a proof and
    # its own client assertion; the browser then carries only client_id and request_uri.
    par = steps["par"]
    assert [(r["path"], r["status"], r["proof"], r["assertion"]) for r in par["requests"]] == [
        ("/auth/oauth/par", 400, True, True),
        ("/auth/oauth/par", 201, True, True),
    ]
    assert par["query"] == ["client_id", "request_uri"]
    assert steps["authorize"] == {"status": 303, "iss": service.url}
    # The code exchange: one request (the nonce is known by now), private_key_jwt and a proof; ES256 ID token.
    token = steps["token"]
    assert [(r["status"], r["proof"], r["assertion"]) for r in token["requests"]] == [(200, True, True)]
    assert token["token_type"] == "dpop"  # openid-client lower-cases it
    assert token["refresh_token"] is True
    assert token["id_token_alg"] == "ES256"
    assert steps["userinfo"]["email"] == "alice@example.com"
    assert all(r["authorization"] == "DPoP" for r in steps["userinfo"]["requests"])
    assert steps["inspect"]["status"] == 200
    assert steps["inspect"]["body"]["cnf"] == {"jkt": par["jkt"]}
    # Refreshed twice with the same refresh token and key: DPoP tokens, no new refresh token (no rotation).
    refresh = steps["refresh"]
    assert refresh["token_types"] == ["dpop", "dpop"]
    assert refresh["new_refresh_token"] is False
    assert refresh["new_access_tokens"] == 3
    assert [r["status"] for r in refresh["requests"]] == [200, 200]
    assert steps["userinfo_after_refresh"]["sub"] == steps["userinfo"]["sub"]
    assert steps["bearer_downgrade"]["status"] == 401
    assert steps["bearer_downgrade"]["body"]["error"] == "invalid_token"
    assert steps["proof_for_another_url"]["status"] == 401
    assert steps["proof_for_another_url"]["body"]["error"] == "invalid_dpop_proof"
    assert steps["replayed_proof"]["status"] == 401
    assert "jti" in steps["replayed_proof"]["body"]["error_description"]


def test_a_request_in_the_query_is_refused_naming_the_profiles_rule(service):
    query = {
        "response_type": "code",
        "client_id": service.app["client_id"],
        "redirect_uri": REDIRECT_URI,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
    }
    response = requests.get(service.url + "/auth/oauth/authorize", params=query, timeout=10, allow_redirects=False)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "docs/fapi.md#authorization-requests" in response.json()["error_description"]


def test_a_token_request_without_dpop_is_refused_naming_the_profiles_rule(service):
    now = int(time.time())
    client_id = service.app["client_id"]
    claims = {"iss": client_id, "sub": client_id, "aud": service.url, "iat": now, "exp": now + 60}
    claims["jti"] = secrets.token_urlsafe(12)
    signed = jwt.encode({"alg": "ES256", "kid": KEY.kid}, claims, KEY)
    data = {"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE, "client_assertion": signed}
    response = requests.post(service.url + "/auth/oauth/token", data=data, timeout=10)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request"
    assert "docs/fapi.md#sender-constrained-tokens" in response.json()["error_description"]
