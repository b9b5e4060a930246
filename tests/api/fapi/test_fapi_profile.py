"""A domain under the FAPI 2.0 Security Profile (docs/fapi.md) at the authorisation
endpoint: every authorisation request is pushed by a private_key_jwt client, with S256 PKCE and a named
redirect URI, answered with ``iss`` and a code of 60 s at most, and the metadata offers only what the profile
allows; each refusal names the rule, and a standard domain is unchanged. The requests and the ``fapi`` world
are tests/helpers/fapi.py's.
"""

from __future__ import annotations

import pytest

from authsvc.core import security, store
from authsvc.core.models import Application
from tests.helpers import HOST, OTHER_HOST, REDIRECT_URI, headers, location_params, pkce_pair, signin
from tests.helpers.fapi import (
    ASSERTION_TYPE,
    assertion,
    authorize_request,
    code_for,
    exchange_code,
    push,
    refused,
    refused_at_push,
)

# The authorisation endpoint


def test_a_compliant_code_flow_works_and_names_the_issuer(client, fapi):
    code, verifier = code_for(client, fapi.strict, state="s1")
    response = exchange_code(client, fapi.strict, code, verifier)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["refresh_token"]


def test_the_authorization_response_carries_iss(client, fapi):
    signin(client, fapi.strict.person.email)
    _, challenge = pkce_pair()
    response = authorize_request(client, fapi.strict.keyed, code_challenge=challenge, code_challenge_method="S256")
    assert response.status_code == 303
    assert location_params(response)["iss"] == f"https://{HOST}"


def test_an_error_response_at_authorize_carries_iss_too(client, fapi):
    # No session and prompt=none: the pushed request is answered at the redirect URI (RFC 9207, 303).
    _, challenge = pkce_pair()
    response = authorize_request(
        client, fapi.strict.keyed, code_challenge=challenge, code_challenge_method="S256", prompt="none", state="s2"
    )
    assert response.status_code == 303, response.get_data(as_text=True)
    assert response.headers["Location"].startswith(REDIRECT_URI)
    params = location_params(response)
    assert params["error"] == "login_required"
    assert params["state"] == "s2"
    assert params["iss"] == f"https://{HOST}"


def test_an_authorization_request_that_is_not_pushed_is_refused(client, fapi):
    signin(client, fapi.strict.person.email)
    _, challenge = pkce_pair()
    query = {"code_challenge": challenge, "code_challenge_method": "S256"}
    response = authorize_request(client, fapi.strict.keyed, pushed=False, **query)
    refused(response, 400, "invalid_request", "authorization-requests")
    assert "/auth/oauth/par" in response.get_json()["error_description"]
    # Whatever the application's own setting says; a standard domain takes the same request in the query.
    assert fapi.strict.keyed.require_pushed_authorization_requests is False
    signin(client, fapi.standard.person.email, host=OTHER_HOST)
    response = authorize_request(client, fapi.standard.keyed, OTHER_HOST, pushed=False, **query)
    assert "code" in location_params(response)


@pytest.mark.parametrize("kind", ["public_app", "secret_app"])
def test_clients_without_private_key_jwt_cannot_push(client, fapi, kind):
    application = getattr(fapi.strict, kind)
    auth = {"client_id": application.client_id}
    if kind == "secret_app":
        auth["client_secret"] = fapi.strict.secret
    _, challenge = pkce_pair()
    response = push(client, application, auth=auth, code_challenge=challenge, code_challenge_method="S256")
    refused_at_push(response, "invalid_client", "client-authentication", status=401)
    # Nor may they send the request in the query instead.
    signin(client, fapi.strict.person.email)
    response = authorize_request(
        client, application, pushed=False, code_challenge=challenge, code_challenge_method="S256"
    )
    refused(response, 400, "invalid_request", "authorization-requests")


def test_a_push_names_the_issuer_alone_as_its_assertions_audience(client, fapi):
    # RFC 9126 2 lets an assertion name PAR's URL; the profile does not (5.3.2.1 item 8).
    _, challenge = pkce_pair()
    signed = assertion(fapi.strict.keyed.client_id, aud=f"https://{HOST}/auth/oauth/par")
    auth = {"client_assertion_type": ASSERTION_TYPE, "client_assertion": signed}
    response = push(client, fapi.strict.keyed, auth=auth, code_challenge=challenge, code_challenge_method="S256")
    refused_at_push(response, "invalid_client", "client-authentication")


@pytest.mark.parametrize(
    ("params", "anchor_text"),
    [
        ({}, "PKCE with code_challenge_method S256 is required"),
        ({"code_challenge": "x" * 43}, "PKCE with code_challenge_method S256 is required"),
        ({"code_challenge": "x" * 43, "code_challenge_method": "plain"}, "plain is not allowed"),
    ],
)
def test_pkce_s256_is_required_even_where_the_application_says_otherwise(client, world, fapi, params, anchor_text):
    # Settings saved before the domain's switch (or written by hand) do not loosen the profile.
    world.update(Application, fapi.strict.keyed.id, require_pkce=False, allow_plain_pkce=True)
    response = authorize_request(client, fapi.strict.keyed, **params)
    refused_at_push(response, "invalid_request", "pkce")
    assert anchor_text in response.get_json()["error_description"]


def test_the_redirect_uri_must_be_named(client, fapi):
    _, challenge = pkce_pair()
    response = authorize_request(
        client, fapi.strict.keyed, redirect_uri=None, code_challenge=challenge, code_challenge_method="S256"
    )
    refused_at_push(response, "invalid_request", "authorization-requests")


def test_a_standard_domain_keeps_its_pkce_settings(client, world, fapi):
    world.update(Application, fapi.standard.keyed.id, require_pkce=False, allow_plain_pkce=True)
    signin(client, fapi.standard.person.email, host=OTHER_HOST)
    for pushed in (True, False):
        assert "code" in location_params(authorize_request(client, fapi.standard.keyed, OTHER_HOST, pushed=pushed))
        plain = authorize_request(
            client,
            fapi.standard.keyed,
            OTHER_HOST,
            pushed=pushed,
            code_challenge="x" * 43,
            code_challenge_method="plain",
        )
        assert "code" in location_params(plain)


def _code_ttl(app, code: str) -> int:
    with app.app_context():
        return store.client().ttl(f"{store.PREFIX}code:{security.digest(code)}")


def test_codes_live_sixty_seconds_at_most(app, client, fapi):
    code, _ = code_for(client, fapi.strict)
    assert 0 < _code_ttl(app, code) <= 60
    # A standard domain's codes keep AUTHSVC_CODE_TTL (300 s).
    code, _ = code_for(client, fapi.standard)
    assert _code_ttl(app, code) > 60


def test_the_metadata_offers_only_what_the_profile_allows(client, fapi):
    strict = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert strict["token_endpoint_auth_methods_supported"] == ["private_key_jwt"]
    assert strict["code_challenge_methods_supported"] == ["S256"]
    assert set(strict["grant_types_supported"]) == {"authorization_code", "refresh_token", "client_credentials"}
    assert "device_authorization_endpoint" not in strict
    assert strict["require_pushed_authorization_requests"] is True
    assert strict["authorization_response_iss_parameter_supported"] is True
    openid = client.get("/.well-known/openid-configuration", headers=headers()).get_json()
    assert openid["token_endpoint_auth_methods_supported"] == ["private_key_jwt"]
    standard = client.get("/.well-known/oauth-authorization-server", headers=headers(OTHER_HOST)).get_json()
    assert "password" in standard["grant_types_supported"]
    assert "plain" in standard["code_challenge_methods_supported"]
