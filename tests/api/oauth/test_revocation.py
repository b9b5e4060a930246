"""RFC 7009: POST /auth/oauth/revoke."""

import base64

import pytest
from sqlalchemy import select

from authsvc.core.models import Token
from tests.helpers import OTHER_HOST, PASSWORD, get_code, headers, signin

REVOKE = "/auth/oauth/revoke"
INSPECT = "/api/engine/v2/api_keys/inspect"


def password_grant(client, client_id, **extra):
    body = {"grant_type": "password", "username": "service@example.com", "password": PASSWORD, "client_id": client_id}
    return client.post("/auth/oauth/token", json={**body, **extra}, headers=headers()).get_json()


def refresh(client, client_id, refresh_token):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    return client.post("/auth/oauth/token", data=data, headers=headers())


def inspect(client, access_token, host=None):
    return client.get(INSPECT, headers=headers(*([host] if host else []), Authorization=f"Bearer {access_token}"))


def basic(client_id, secret):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


@pytest.fixture
def tokens(client, setup):
    return password_grant(client, setup.public_app.client_id)


def test_a_public_client_revokes_its_access_token_with_its_client_id(client, setup, tokens):
    response = client.post(
        REVOKE, data={"token": tokens["access_token"], "client_id": setup.public_app.client_id}, headers=headers()
    )
    assert response.status_code == 200
    assert response.get_json() == {}
    assert response.headers["Cache-Control"] == "no-store"
    assert inspect(client, tokens["access_token"]).status_code == 401
    # The refresh token issued with it goes too: the client asked for this grant's access to end.
    assert refresh(client, setup.public_app.client_id, tokens["refresh_token"]).status_code == 400


@pytest.mark.parametrize("hint", [None, "refresh_token", "access_token"])
def test_revoking_a_refresh_token_revokes_the_access_tokens_of_its_grant(client, setup, tokens, hint):
    rotated = refresh(client, setup.public_app.client_id, tokens["refresh_token"]).get_json()
    data = {"token": rotated["refresh_token"], "client_id": setup.public_app.client_id}
    if hint:
        data["token_type_hint"] = hint  # a wrong hint still finds the token (RFC 7009 2.1)
    assert client.post(REVOKE, data=data, headers=headers()).status_code == 200
    assert inspect(client, rotated["access_token"]).status_code == 401
    assert inspect(client, tokens["access_token"]).status_code == 401
    assert refresh(client, setup.public_app.client_id, rotated["refresh_token"]).get_json()["error"] == "invalid_grant"


def test_a_json_body_works_too(client, setup, tokens):
    response = client.post(
        REVOKE, json={"token": tokens["access_token"], "client_id": setup.public_app.client_id}, headers=headers()
    )
    assert response.status_code == 200
    assert inspect(client, tokens["access_token"]).status_code == 401


def test_a_confidential_client_must_authenticate(client, setup):
    app_ = setup.confidential_app
    tokens = password_grant(client, app_.client_id, client_secret=setup.client_secret)
    unauthenticated = client.post(REVOKE, data={"token": tokens["access_token"], "client_id": app_.client_id})
    assert unauthenticated.status_code == 401
    assert unauthenticated.get_json()["error"] == "invalid_client"
    wrong = client.post(
        REVOKE, data={"token": tokens["access_token"]}, headers=headers(Authorization=basic(app_.client_id, "nope"))
    )
    assert wrong.status_code == 401
    assert inspect(client, tokens["access_token"]).status_code == 200
    response = client.post(
        REVOKE,
        data={"token": tokens["access_token"]},
        headers=headers(Authorization=basic(app_.client_id, setup.client_secret)),
    )
    assert response.status_code == 200
    assert inspect(client, tokens["access_token"]).status_code == 401


def test_client_secret_post_authenticates_too(client, setup):
    app_ = setup.confidential_app
    tokens = password_grant(client, app_.client_id, client_secret=setup.client_secret)
    data = {"token": tokens["refresh_token"], "client_id": app_.client_id, "client_secret": setup.client_secret}
    assert client.post(REVOKE, data=data, headers=headers()).status_code == 200
    assert inspect(client, tokens["access_token"]).status_code == 401


def test_another_clients_token_answers_200_and_stays_valid(client, setup, world, tokens):
    other, _ = world.application(setup.domain, name="Other")
    for token in (tokens["access_token"], tokens["refresh_token"]):
        response = client.post(REVOKE, data={"token": token, "client_id": other.client_id}, headers=headers())
        assert response.status_code == 200
        assert response.get_json() == {}
    assert inspect(client, tokens["access_token"]).status_code == 200
    assert refresh(client, setup.public_app.client_id, tokens["refresh_token"]).status_code == 200


def test_an_unknown_token_answers_200_and_changes_nothing(client, setup, world, tokens):
    response = client.post(
        REVOKE, data={"token": "no-such-token", "client_id": setup.public_app.client_id}, headers=headers()
    )
    assert response.status_code == 200
    assert [row.revoked_at for row in world.query(select(Token))] == [None]


def test_a_token_of_another_domain_is_unknown_here(client, setup, world):
    other = world.domain(OTHER_HOST)
    other_app, _ = world.application(other, client_id="same-client-elsewhere")
    world.user(other, "service@example.com", service_account=True)
    elsewhere = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": "same-client-elsewhere",
        },
        headers=headers(OTHER_HOST),
    ).get_json()
    response = client.post(
        REVOKE, data={"token": elsewhere["access_token"], "client_id": setup.public_app.client_id}, headers=headers()
    )
    assert response.status_code == 200
    assert inspect(client, elsewhere["access_token"], host=OTHER_HOST).status_code == 200


def test_a_code_flow_token_is_revoked_too(client, setup):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    tokens = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": setup.public_app.client_id,
            "redirect_uri": "https://app.example.com/callback",
        },
        headers=headers(),
    ).get_json()
    client.post(
        REVOKE, data={"token": tokens["access_token"], "client_id": setup.public_app.client_id}, headers=headers()
    )
    assert inspect(client, tokens["access_token"]).status_code == 401


@pytest.mark.parametrize(
    "data,error,status",
    [
        ({}, "invalid_request", 400),
        ({"token": ""}, "invalid_request", 400),
        ({"token": "x", "client_id": "no-such-client"}, "invalid_client", 400),
    ],
)
def test_bad_requests_are_rfc_errors(client, setup, data, error, status):
    data = {"client_id": setup.public_app.client_id, **data}
    response = client.post(REVOKE, data=data, headers=headers())
    assert response.status_code == status
    assert response.get_json()["error"] == error


def test_an_unknown_hint_is_ignored(client, setup, tokens):
    data = {"token": tokens["access_token"], "token_type_hint": "id_token", "client_id": setup.public_app.client_id}
    assert client.post(REVOKE, data=data, headers=headers()).status_code == 200
    assert inspect(client, tokens["access_token"]).status_code == 401


def test_the_token_is_refused_in_the_query_string(client, setup, tokens):
    response = client.post(
        REVOKE,
        query_string={"token": tokens["access_token"]},
        data={"client_id": setup.public_app.client_id},
        headers=headers(),
    )
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"
    assert inspect(client, tokens["access_token"]).status_code == 200


def test_revocation_is_stored_and_makes_the_row_purgeable(client, setup, world, tokens):
    client.post(
        REVOKE, data={"token": tokens["access_token"], "client_id": setup.public_app.client_id}, headers=headers()
    )
    [row] = world.query(select(Token))
    assert row.revoked_at is not None
    assert row.purgeable_at == row.revoked_at
