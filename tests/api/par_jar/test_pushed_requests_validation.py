"""What PAR (RFC 9126) checks of a push before it keeps it: the client's authentication (a
wrong secret or none; a client assertion, whose audience may be the issuer, the token endpoint or PAR itself) and
the request itself, refused as JSON to the application wherever /auth/oauth/authorize would refuse it. The
requests are tests/helpers/pushed_requests.py's.
"""

from __future__ import annotations

import pytest

from tests.helpers import HOST, REDIRECT_URI, headers, signin
from tests.helpers.private_key_jwt import ASSERTION_TYPE, JWKS, RSA_KEY, assertion
from tests.helpers.pushed_requests import PAR_URL, URN, assert_refused, authorize_pushed, basic, push, pushed_uri

# What PAR refuses ---------------------------------------------------------------------------------


def test_a_wrong_secret_or_none_is_invalid_client(client, setup):
    app = setup.confidential_app
    assert_refused(push(client, basic(app.client_id, "wrong")), "invalid_client", 401)
    response = push(client, client_id=app.client_id)
    assert response.status_code in (400, 401)
    assert response.get_json()["error"] == "invalid_client"
    assert push(client, client_id="no-such-client").get_json()["error"] == "invalid_client"
    response = push(client, client_id=app.client_id, client_secret="wrong")
    assert response.get_json()["error"] == "invalid_client"


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"redirect_uri": "https://evil.example.net/callback"}, "invalid_request"),
        ({"scope": "admin"}, "invalid_scope"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"request_uri": URN + "abc"}, "invalid_request"),
        ({"code_challenge": "x" * 43, "code_challenge_method": "plain"}, "invalid_request"),
        ({"prompt": "none login"}, "invalid_request"),
        ({"response_mode": "form_post"}, "invalid_request"),
    ],
)
def test_a_request_authorize_would_refuse_is_refused_at_push_as_json(client, confidential, params, error):
    _, auth = confidential
    body = assert_refused(push(client, auth, **params), error)
    assert "state" not in body


def test_a_public_application_requiring_pkce_must_push_a_challenge(client, world, setup):
    app, _ = world.application(setup.domain, require_pkce=True, name="SPA")
    assert_refused(push(client, client_id=app.client_id), "invalid_request")


def test_parameters_in_the_query_of_a_push_are_refused(client, confidential):
    _, auth = confidential
    response = client.post(
        "/auth/oauth/par?scope=public",
        data={"response_type": "code", "redirect_uri": REDIRECT_URI},
        headers=headers(**auth),
    )
    assert_refused(response, "invalid_request")


def test_pushing_takes_only_post(client):
    assert client.get("/auth/oauth/par", headers=headers()).status_code == 405


# private_key_jwt at PAR: the assertion's aud may be the issuer, the token endpoint or PAR itself -----


@pytest.mark.parametrize("aud", [PAR_URL, f"https://{HOST}", f"https://{HOST}/auth/oauth/token"])
def test_a_client_assertion_authenticates_a_push(client, world, setup, aud):
    app, _ = world.application(setup.domain, token_endpoint_auth_method="private_key_jwt", jwks=JWKS, name="Keyed")
    signed = assertion(app.client_id, RSA_KEY, "RS256", aud=aud)
    response = push(client, client_assertion_type=ASSERTION_TYPE, client_assertion=signed)
    uri = pushed_uri(response)
    signin(client)
    assert authorize_pushed(client, app.client_id, uri).status_code == 302


def test_a_client_assertion_for_another_endpoint_is_refused(client, world, setup):
    app, _ = world.application(setup.domain, token_endpoint_auth_method="private_key_jwt", jwks=JWKS, name="Keyed")
    signed = assertion(app.client_id, RSA_KEY, "RS256", aud=f"https://{HOST}/auth/oauth/introspect")
    response = push(client, client_assertion_type=ASSERTION_TYPE, client_assertion=signed)
    assert response.get_json()["error"] == "invalid_client"
