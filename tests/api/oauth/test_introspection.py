"""RFC 7662: POST /auth/oauth/introspect."""

import pytest
from sqlalchemy import select

from authsvc.core.database import now
from authsvc.core.models import Application, Token, User
from tests.helpers import HOST, OTHER_HOST, headers
from tests.helpers.introspection import INTROSPECT, basic, password_grant


@pytest.fixture
def tokens(client, setup):
    return password_grant(client, setup.public_app.client_id, scope="public mqtt.read")


@pytest.fixture
def as_resource_server(client, setup, world):
    """Introspect as the domain's confidential client, which an admin marked a resource server, with HTTP Basic."""
    world.update(Application, setup.confidential_app.id, introspect=True)

    def introspect(token, host=HOST, **extra):
        auth = basic(setup.confidential_app.client_id, setup.client_secret)
        return client.post(INTROSPECT, data={"token": token, **extra}, headers=headers(host, Authorization=auth))

    return introspect


def test_an_active_access_token_is_described(client, setup, tokens, as_resource_server):
    response = as_resource_server(tokens["access_token"])
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_json()
    assert body == {
        "active": True,
        "scope": "public mqtt.read",
        "client_id": setup.public_app.client_id,
        "token_type": "bearer",
        "exp": body["iat"] + 7200,
        "iat": body["iat"],
        "aud": HOST,
        "iss": f"https://{HOST}",
        "sub": str(setup.service.id),
        "username": "service@example.com",
    }
    assert abs(body["iat"] - now()) < 5


def test_a_refresh_token_is_described_as_one(tokens, as_resource_server, world):
    body = as_resource_server(tokens["refresh_token"], token_type_hint="refresh_token").get_json()
    [row] = world.query(select(Token))
    assert body["active"] is True
    assert body["token_type"] == "refresh_token"
    assert body["exp"] == row.refresh_expires_at


def test_a_wrong_hint_still_finds_the_token(tokens, as_resource_server):
    assert as_resource_server(tokens["access_token"], token_type_hint="refresh_token").get_json()["active"] is True


def inactive(response) -> bool:
    assert response.status_code == 200
    return response.get_json() == {"active": False}


def test_unknown_tokens_are_inactive(setup, as_resource_server):
    assert inactive(as_resource_server("no-such-token"))


def test_revoked_tokens_are_inactive(client, setup, tokens, as_resource_server):
    client.post(
        "/auth/oauth/revoke",
        data={"token": tokens["refresh_token"], "client_id": setup.public_app.client_id},
        headers=headers(),
    )
    assert inactive(as_resource_server(tokens["access_token"]))
    assert inactive(as_resource_server(tokens["refresh_token"]))


def test_expired_tokens_are_inactive(tokens, as_resource_server, world):
    [row] = world.query(select(Token))
    world.update(Token, row.id, issued_at=now() - 7201, refresh_expires_at=now() - 1)
    assert inactive(as_resource_server(tokens["access_token"]))
    assert inactive(as_resource_server(tokens["refresh_token"]))


def test_a_spent_refresh_token_is_inactive(client, setup, tokens, as_resource_server):
    client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
    )
    assert inactive(as_resource_server(tokens["refresh_token"]))


def test_a_disabled_users_tokens_are_inactive(setup, tokens, as_resource_server, world):
    world.update(User, setup.service.id, disabled=True)
    assert inactive(as_resource_server(tokens["access_token"]))


def test_tokens_of_another_domain_are_inactive(client, setup, world, as_resource_server):
    other = world.domain(OTHER_HOST)
    other_app, _ = world.application(other)
    world.user(other, "service@example.com", service_account=True)
    elsewhere = password_grant(client, other_app.client_id, host=OTHER_HOST)
    assert elsewhere["access_token"]
    assert inactive(as_resource_server(elsewhere["access_token"]))


def test_client_secret_post_works_too(client, setup, tokens, as_resource_server):
    data = {
        "token": tokens["access_token"],
        "client_id": setup.confidential_app.client_id,
        "client_secret": setup.client_secret,
    }
    assert client.post(INTROSPECT, data=data, headers=headers()).get_json()["active"] is True


def test_a_public_client_may_not_introspect(client, setup, tokens):
    response = client.post(
        INTROSPECT, data={"token": tokens["access_token"], "client_id": setup.public_app.client_id}, headers=headers()
    )
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_client"


def test_a_confidential_client_of_another_domain_may_not_introspect(client, setup, world, tokens):
    other = world.domain(OTHER_HOST)
    other_app, secret = world.application(other, confidential=True)
    response = client.post(
        INTROSPECT,
        data={"token": tokens["access_token"]},
        headers=headers(Authorization=basic(other_app.client_id, secret)),
    )
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_client"


def test_a_wrong_client_secret_is_401(client, setup, tokens):
    response = client.post(
        INTROSPECT,
        data={"token": tokens["access_token"]},
        headers=headers(Authorization=basic(setup.confidential_app.client_id, "wrong")),
    )
    assert response.status_code == 401


def test_no_credential_at_all_is_401(client, setup, tokens):
    assert client.post(INTROSPECT, data={"token": tokens["access_token"]}, headers=headers()).status_code == 401


def test_an_admins_bearer_token_may_introspect(client, setup, world, tokens):
    world.update(User, setup.service.id, admin=True)
    world.update(Application, setup.public_app.id, scopes="public admin")
    admin_token = password_grant(client, setup.public_app.client_id, scope="public admin")["access_token"]
    response = client.post(
        INTROSPECT, data={"token": tokens["access_token"]}, headers=headers(Authorization=f"Bearer {admin_token}")
    )
    assert response.status_code == 200
    assert response.get_json()["active"] is True


def test_an_admin_api_key_may_introspect(client, setup, world, tokens):
    world.update(User, setup.person.id, admin=True)
    key = world.api_key(setup.person, scopes="public admin", permission="admin")
    response = client.post(INTROSPECT, data={"token": tokens["access_token"]}, headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 200
    assert response.get_json()["active"] is True


@pytest.mark.parametrize("permission", ["user", "support"])
def test_a_key_below_admin_level_may_not_introspect(client, setup, world, tokens, permission):
    world.update(User, setup.person.id, admin=True, support=True)
    key = world.api_key(setup.person, scopes="public admin", permission=permission)
    response = client.post(INTROSPECT, data={"token": tokens["access_token"]}, headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 403
    assert response.get_json()["error"] == "insufficient_scope"


def test_a_non_admins_token_may_not_introspect(client, setup, tokens):
    response = client.post(
        INTROSPECT,
        data={"token": tokens["access_token"]},
        headers=headers(Authorization=f"Bearer {tokens['access_token']}"),
    )
    assert response.status_code == 403


def test_an_invalid_admin_credential_is_401(client, setup, tokens):
    response = client.post(
        INTROSPECT, data={"token": tokens["access_token"]}, headers=headers(Authorization="Bearer not-a-token")
    )
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"


def test_an_admin_of_another_domain_may_not_introspect(client, setup, world, tokens):
    other = world.domain(OTHER_HOST)
    admin = world.user(other, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes="public admin", permission="admin")
    response = client.post(INTROSPECT, data={"token": tokens["access_token"]}, headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 401


def test_a_missing_token_is_invalid_request(client, setup, as_resource_server):
    response = as_resource_server("")
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"
