"""A domain under the FAPI 2.0 Security Profile (docs/fapi.md) at the token endpoint:
only private_key_jwt authenticates a client, with an assertion for the issuer alone signed with PS256 or ES256;
the password and device grants are refused, no parameter comes in the query string, ID tokens are signed with
ES256, and refresh tokens are not rotated (FAPI 2.0 5.3.2.1 item 9); each refusal names the rule, and a
standard domain is unchanged. The requests and the ``fapi`` world are tests/helpers/fapi.py's.
"""

from __future__ import annotations

import base64
import json

import pytest

from authsvc.core.models import Application
from tests.helpers import HOST, OTHER_HOST, PASSWORD, REDIRECT_URI, headers
from tests.helpers.dpop import Holder
from tests.helpers.fapi import (
    ASSERTION_TYPE,
    INSPECT,
    assertion,
    code_for,
    exchange_code,
    refused,
    token_post,
    token_request,
    with_proof,
)

# The token endpoint


def test_a_secret_is_no_client_authentication_under_the_profile(client, fapi):
    strict, standard = fapi.strict, fapi.standard
    body = {"grant_type": "client_credentials", "client_secret": strict.secret}
    # With a DPoP proof, as the profile asks: the secret alone is what is refused.
    response = token_post(client, **body, client_id=strict.secret_app.client_id)
    refused(response, 401, "invalid_client", "client-authentication")
    # The same request to a standard domain fails only for want of a service account.
    response = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "client_credentials",
            "client_id": standard.secret_app.client_id,
            "client_secret": standard.secret,
        },
        headers=headers(OTHER_HOST),
    )
    assert response.get_json()["error"] == "unauthorized_client"


def test_a_public_client_cannot_exchange_a_code_under_the_profile(client, fapi):
    response = token_post(
        client,
        grant_type="authorization_code",
        code="whatever",
        client_id=fapi.strict.public_app.client_id,
        redirect_uri=REDIRECT_URI,
    )
    refused(response, 401, "invalid_client", "client-authentication")


def test_the_password_grant_is_refused(client, fapi):
    strict, standard = fapi.strict, fapi.standard
    body = {"grant_type": "password", "username": strict.service.email, "password": PASSWORD}
    refused(token_request(client, strict.keyed, **body), 400, "unauthorized_client", "grants")
    # A standard domain's service account still gets a token this way.
    body["username"] = standard.service.email
    assert token_request(client, standard.keyed, OTHER_HOST, **body).status_code == 200


def test_client_credentials_with_private_key_jwt_work(client, fapi):
    response = token_request(client, fapi.strict.keyed, grant_type="client_credentials", scope="mqtt.read")
    assert response.status_code == 200, response.get_json()


@pytest.mark.parametrize("name", ["scope", "code", "refresh_token"])
def test_no_token_request_parameter_may_come_in_the_query_string(client, fapi, name):
    response = token_request(client, fapi.strict.keyed, grant_type="client_credentials", query={name: "mqtt.read"})
    refused(response, 400, "invalid_request", "no-secrets-in-urls")
    # A standard domain reads the platform's parameters from the query string (docs/platform.md).
    response = token_request(
        client, fapi.standard.keyed, OTHER_HOST, grant_type="client_credentials", query={"scope": "mqtt.read"}
    )
    assert response.status_code == 200, response.get_json()


def test_a_client_assertion_names_the_issuer_alone(client, fapi):
    token_url = f"https://{HOST}/auth/oauth/token"
    response = token_post(
        client,
        grant_type="client_credentials",
        client_assertion_type=ASSERTION_TYPE,
        client_assertion=lambda: assertion(fapi.strict.keyed.client_id, aud=token_url),
    )
    refused(response, 400, "invalid_client", "client-authentication")
    # A standard domain accepts its token endpoint as the audience too (OpenID Connect Core 9).
    signed = assertion(fapi.standard.keyed.client_id, aud=f"https://{OTHER_HOST}/auth/oauth/token")
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE, "client_assertion": signed},
        headers=headers(OTHER_HOST),
    )
    assert response.status_code == 200, response.get_json()


def test_client_assertions_are_signed_with_ps256_or_es256(client, fapi):
    def rs256(tenant):
        return token_post(
            client,
            tenant.host,
            grant_type="client_credentials",
            client_assertion_type=ASSERTION_TYPE,
            client_assertion=lambda: assertion(tenant.keyed.client_id, tenant.host, alg="RS256"),
        )

    refused(rs256(fapi.strict), 400, "invalid_client", "algorithms")
    assert rs256(fapi.standard).status_code == 200


def test_id_tokens_are_signed_with_es256(client, fapi):
    code, verifier = code_for(client, fapi.strict, scope="openid")
    response = exchange_code(client, fapi.strict, code, verifier)
    assert response.status_code == 200, response.get_json()
    header = response.get_json()["id_token"].split(".")[0]
    assert json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["alg"] == "ES256"


def test_the_device_grant_is_refused(client, world, fapi):
    world.update(Application, fapi.strict.keyed.id, device=True)
    data = {"client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion(fapi.strict.keyed.client_id)}
    response = client.post("/auth/oauth/device_authorization", data=data, headers=headers())
    refused(response, 400, "unauthorized_client", "grants")
    response = token_request(
        client, fapi.strict.keyed, grant_type="urn:ietf:params:oauth:grant-type:device_code", device_code="x"
    )
    refused(response, 400, "unauthorized_client", "grants")


# Refresh tokens (FAPI 2.0 5.3.2.1 item 9: no rotation)


def _refresh_token(client, tenant) -> str:
    code, verifier = code_for(client, tenant)
    response = exchange_code(client, tenant, code, verifier)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["refresh_token"]


def test_refresh_tokens_are_not_rotated_so_a_retry_succeeds(client, fapi):
    holder = Holder()
    refresh_token = _refresh_token(client, fapi.strict)
    first = token_request(
        client, fapi.strict.keyed, holder=holder, grant_type="refresh_token", refresh_token=refresh_token
    )
    assert first.status_code == 200, first.get_json()
    assert first.get_json()["token_type"] == "DPoP"
    assert "refresh_token" not in first.get_json()
    # The client lost that answer, or simply refreshes again later: the same refresh token still works.
    again = token_request(
        client, fapi.strict.keyed, holder=holder, grant_type="refresh_token", refresh_token=refresh_token
    )
    assert again.status_code == 200, again.get_json()
    inspect = client.get(INSPECT, headers=with_proof(holder, again.get_json()["access_token"]))
    assert inspect.status_code == 200, inspect.get_json()
    assert inspect.get_json()["cnf"] == {"jkt": holder.jkt}


def test_a_revoked_refresh_token_stays_revoked(client, fapi):
    refresh_token = _refresh_token(client, fapi.strict)
    data = {
        "token": refresh_token,
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": assertion(fapi.strict.keyed.client_id),
    }
    assert client.post("/auth/oauth/revoke", data=data, headers=headers()).status_code == 200
    response = token_request(client, fapi.strict.keyed, grant_type="refresh_token", refresh_token=refresh_token)
    assert response.get_json()["error"] == "invalid_grant"


def test_a_standard_domain_still_rotates_refresh_tokens(client, fapi):
    refresh_token = _refresh_token(client, fapi.standard)
    first = token_request(
        client, fapi.standard.keyed, OTHER_HOST, grant_type="refresh_token", refresh_token=refresh_token
    )
    assert first.get_json()["refresh_token"] != refresh_token
    again = token_request(
        client, fapi.standard.keyed, OTHER_HOST, grant_type="refresh_token", refresh_token=refresh_token
    )
    assert again.get_json()["error"] == "invalid_grant"
