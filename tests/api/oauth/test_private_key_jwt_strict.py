"""private_key_jwt, strictly: ``aud`` is one string naming this server, and a
request carries one client authentication method (RFC 6749 2.3)."""

from __future__ import annotations

import base64

import pytest

from tests.helpers import HOST, headers
from tests.helpers.private_key_jwt import TOKEN_URL, assert_invalid_client, assertion, token_request

ISSUER = f"https://{HOST}"


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


@pytest.mark.parametrize(
    "aud",
    [
        [TOKEN_URL, "https://elsewhere.example/token"],
        [ISSUER, "https://elsewhere.example"],
        [TOKEN_URL],
        {"url": TOKEN_URL},
    ],
)
def test_an_assertion_whose_aud_is_not_one_string_naming_this_server_is_refused(client, keyed, aud):
    assert_invalid_client(token_request(client, assertion(keyed.client_id, aud=aud)), "aud")


@pytest.mark.parametrize("aud", [TOKEN_URL, ISSUER])
def test_an_assertion_naming_the_issuer_or_the_token_endpoint_is_accepted(client, keyed, aud):
    assert token_request(client, assertion(keyed.client_id, aud=aud)).status_code == 200


def test_an_assertion_sent_to_introspection_may_name_that_endpoint(client, keyed):
    issued = token_request(client, assertion(keyed.client_id)).get_json()["access_token"]
    body = {
        "token": issued,
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": assertion(keyed.client_id, aud=f"{ISSUER}/auth/oauth/introspect"),
    }
    response = client.post("/auth/oauth/introspect", data=body, headers=headers())
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["active"] is True


def test_basic_with_a_wrong_secret_and_an_assertion_of_another_client_is_invalid_client(client, setup, keyed):
    response = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion(keyed.client_id),
        },
        headers=headers(Authorization=basic(setup.confidential_app.client_id, "wrong secret")),
    )
    assert response.status_code == 401, response.get_json()
    assert response.get_json()["error"] == "invalid_client"
    assert "more than one" in response.get_json()["error_description"]


def test_a_right_secret_in_both_basic_and_the_body_is_still_two_methods(client, setup):
    app = setup.confidential_app
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "password", "username": "service@example.com", "password": "x", "client_secret": "y"},
        headers=headers(Authorization=basic(app.client_id, setup.client_secret)),
    )
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_client"


def test_a_secret_in_the_body_with_an_assertion_is_invalid_client(client, setup, keyed):
    response = token_request(
        client, assertion(keyed.client_id), client_id=keyed.client_id, client_secret=setup.client_secret
    )
    assert_invalid_client(response, "more than one")


def test_basic_with_a_wrong_secret_and_another_clients_client_id_in_the_body_is_invalid_client(client, setup):
    # The body's client_id names a public client, whose "none" method would otherwise win over the failed Basic:
    # two clients named in one request is two authentications (RFC 6749 2.3).
    from tests.helpers import get_code, signin

    signin(client)
    code = get_code(client, setup.public_app.client_id)
    response = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "https://app.example.com/callback",
            "client_id": setup.public_app.client_id,
        },
        headers=headers(Authorization=basic(setup.confidential_app.client_id, "wrong secret")),
    )
    assert response.status_code == 401, response.get_json()
    assert response.get_json()["error"] == "invalid_client"
    assert "access_token" not in response.get_json()


def test_basic_with_the_same_client_id_in_the_body_still_authenticates(client, setup):
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", "client_id": setup.confidential_app.client_id},
        headers=headers(Authorization=basic(setup.confidential_app.client_id, setup.client_secret)),
    )
    assert response.get_json().get("error") != "invalid_client", response.get_json()
