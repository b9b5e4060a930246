"""A domain under the FAPI 2.0 Security Profile (docs/fapi.md) sender-constrains its tokens:
every token request carries a DPoP proof (RFC 9449) signed with one of the profile's algorithms (at PAR too, where
a proof binds the code), JWT access tokens are signed with ES256, and a credential is presented at the API
(inspect, UserInfo) in its header only, never in the query string or a cookie; each refusal names the rule, and a
standard domain is unchanged. The requests and the ``fapi`` world are tests/helpers/fapi.py's.
"""

from __future__ import annotations

import base64
import json

import pytest

from authsvc.core.models import Application, Domain
from tests.helpers import HOST, OTHER_HOST, REDIRECT_URI, headers, location_params, pkce_pair, signin
from tests.helpers.dpop import Holder
from tests.helpers.fapi import (
    AUTO,
    INSPECT,
    client_authentication,
    code_for,
    refused,
    refused_at_push,
    token_request,
    with_proof,
)

# Credentials at the API (inspect, UserInfo)


def _access_token(client, tenant, holder: Holder | None = None) -> str:
    """A client credentials token of ``tenant``: DPoP-bound to ``holder`` in the profile's domain."""
    response = token_request(
        client, tenant.keyed, tenant.host, holder=holder or AUTO, grant_type="client_credentials", scope="mqtt.read"
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["access_token"]


def test_access_tokens_are_accepted_in_the_authorization_header_only(client, fapi):
    holder = Holder()
    token = _access_token(client, fapi.strict, holder)
    assert client.get(INSPECT, headers=with_proof(holder, token)).status_code == 200
    response = client.get(INSPECT, query_string={"bearer_token": token}, headers=headers())
    refused(response, 400, "invalid_request", "no-secrets-in-urls")
    assert 'error="invalid_request"' in response.headers["WWW-Authenticate"]
    client.set_cookie("bearer_token", token, domain=HOST)
    refused(client.get(INSPECT, headers=headers()), 400, "invalid_request", "no-secrets-in-urls")
    refused(client.get("/auth/oauth/userinfo", headers=headers()), 400, "invalid_request", "no-secrets-in-urls")


def test_api_keys_are_accepted_in_their_header_only(client, world, fapi):
    key = world.api_key(fapi.strict.person)
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 200
    refused(
        client.get(INSPECT, query_string={"api-key": key}, headers=headers()),
        400,
        "invalid_request",
        "no-secrets-in-urls",
    )


def test_a_standard_domain_still_reads_credentials_from_the_query_string_and_cookies(client, world, fapi):
    token = _access_token(client, fapi.standard)
    assert client.get(INSPECT, query_string={"bearer_token": token}, headers=headers(OTHER_HOST)).status_code == 200
    key = world.api_key(fapi.standard.person)
    assert client.get(INSPECT, query_string={"api-key": key}, headers=headers(OTHER_HOST)).status_code == 200


# Sender-constrained tokens (DPoP, RFC 9449) and their algorithms


def test_a_token_request_without_a_dpop_proof_is_refused(client, fapi):
    response = token_request(client, fapi.strict.keyed, holder=None, grant_type="client_credentials")
    refused(response, 400, "invalid_request", "sender-constrained-tokens")
    # Whatever the application's own setting says; a standard domain issues a bearer token.
    assert fapi.strict.keyed.dpop_bound_access_tokens is False
    response = token_request(client, fapi.standard.keyed, OTHER_HOST, holder=None, grant_type="client_credentials")
    assert response.get_json()["token_type"] == "bearer"


def test_a_code_exchange_without_a_proof_is_refused_and_the_code_survives(client, fapi):
    code, verifier = code_for(client, fapi.strict)
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    exchange["code_verifier"] = verifier
    refused(
        token_request(client, fapi.strict.keyed, holder=None, **exchange),
        400,
        "invalid_request",
        "sender-constrained-tokens",
    )
    holder = Holder()
    response = token_request(client, fapi.strict.keyed, holder=holder, **exchange)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["token_type"] == "DPoP"


@pytest.mark.parametrize("alg", ["ES256", "PS256", "EdDSA"])
def test_dpop_proofs_with_the_profiles_algorithms_are_accepted(client, fapi, alg):
    response = token_request(client, fapi.strict.keyed, holder=Holder(alg), grant_type="client_credentials")
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["token_type"] == "DPoP"


def test_an_rs256_dpop_proof_is_refused_under_the_profile(client, fapi):
    response = token_request(client, fapi.strict.keyed, holder=Holder("RS256"), grant_type="client_credentials")
    refused(response, 400, "invalid_dpop_proof", "algorithms")
    assert "RS256" in response.get_json()["error_description"]
    # A standard domain takes it (RFC 9449 lists RS256).
    response = token_request(
        client, fapi.standard.keyed, OTHER_HOST, holder=Holder("RS256"), grant_type="client_credentials"
    )
    assert response.get_json()["token_type"] == "DPoP"
    # Nor is it taken at PAR.
    _, challenge = pkce_pair()
    rs256 = Holder("RS256")
    for _ in range(2):
        proof = rs256.proof(f"https://{HOST}/auth/oauth/par")
        body = {"response_type": "code", "redirect_uri": REDIRECT_URI, "code_challenge": challenge}
        body |= {"code_challenge_method": "S256", **client_authentication(fapi.strict.keyed)}
        pushed = rs256.remember(client.post("/auth/oauth/par", data=body, headers=headers(DPoP=proof)))
    refused_at_push(pushed, "invalid_dpop_proof", "algorithms")


def test_a_token_bound_to_an_rs256_key_before_the_switch_needs_the_profiles_algorithms(client, world, fapi):
    # A token of a standard domain bound to an RSA key with RS256; then the domain switches to the profile.
    holder = Holder("RS256")
    response = token_request(
        client, fapi.standard.keyed, OTHER_HOST, holder=holder, grant_type="client_credentials", scope="mqtt.read"
    )
    token = response.get_json()["access_token"]
    assert client.get(INSPECT, headers=with_proof(holder, token, host=OTHER_HOST)).status_code == 200
    world.update(Domain, fapi.standard.domain.id, profile="fapi2")
    response = client.get(INSPECT, headers=with_proof(holder, token, host=OTHER_HOST))
    refused(response, 401, "invalid_dpop_proof", "algorithms")
    assert 'algs="ES256 PS256 EdDSA Ed25519"' in response.headers["WWW-Authenticate"]


def test_a_dpop_proof_at_par_binds_the_code(client, fapi):
    holder = Holder()
    verifier, challenge = pkce_pair()
    params = {"response_type": "code", "redirect_uri": REDIRECT_URI}
    params |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    for _ in range(2):  # the nonce first
        body = {**params, **client_authentication(fapi.strict.keyed)}
        pushed = client.post(
            "/auth/oauth/par", data=body, headers=headers(DPoP=holder.proof(f"https://{HOST}/auth/oauth/par"))
        )
        holder.remember(pushed)
    assert pushed.status_code == 201, pushed.get_json()
    signin(client, fapi.strict.person.email)
    query = {"client_id": fapi.strict.keyed.client_id, "request_uri": pushed.get_json()["request_uri"]}
    code = location_params(client.get("/auth/oauth/authorize", query_string=query, headers=headers()))["code"]
    # Another key is refused: the code is bound to the one that pushed.
    response = token_request(
        client,
        fapi.strict.keyed,
        holder=Holder(),
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT_URI,
        code_verifier=verifier,
    )
    assert response.get_json()["error"] == "invalid_grant"
    assert "dpop_jkt" in response.get_json()["error_description"]


def test_the_metadata_offers_the_profiles_dpop_algorithms(client, fapi):
    strict = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert "RS256" not in strict["dpop_signing_alg_values_supported"]
    assert {"ES256", "PS256", "EdDSA"} <= set(strict["dpop_signing_alg_values_supported"])
    standard = client.get("/.well-known/oauth-authorization-server", headers=headers(OTHER_HOST)).get_json()
    assert "RS256" in standard["dpop_signing_alg_values_supported"]


def test_jwt_access_tokens_are_signed_with_es256_and_name_their_key(client, world, fapi):
    # Even where the application asks RS256 for its ID tokens (a row kept from before the switch).
    for tenant in (fapi.strict, fapi.standard):
        world.update(Application, tenant.keyed.id, access_token_format="jwt", id_token_signed_response_alg="RS256")
    holder = Holder()
    token = _access_token(client, fapi.strict, holder)
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=" * (-len(token.split(".")[0]) % 4)))
    assert header["alg"] == "ES256"
    assert header["typ"] == "at+jwt"
    payload = token.split(".")[1]
    assert json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["cnf"] == {"jkt": holder.jkt}
    standard = _access_token(client, fapi.standard).split(".")[0]
    assert json.loads(base64.urlsafe_b64decode(standard + "=" * (-len(standard) % 4)))["alg"] == "RS256"
