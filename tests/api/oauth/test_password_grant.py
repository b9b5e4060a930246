"""docs/platform.md#password-grant: the password grant, for service accounts only."""

import base64

import pytest
from sqlalchemy import select

from authsvc.core.models import Token, User
from tests.helpers import PASSWORD, headers


def password_grant(client, client_id, *, host="auth.example.com", as_json=True, auth=None, **fields):
    body = {"grant_type": "password", "username": "service@example.com", "password": PASSWORD, "client_id": client_id}
    body.update(fields)
    body = {k: v for k, v in body.items() if v is not None}
    extra = {"Authorization": auth} if auth else {}
    if as_json:
        return client.post("/auth/oauth/token", json=body, headers=headers(host, **extra))
    return client.post("/auth/oauth/token", data=body, headers=headers(host, **extra))


def test_json_body_issues_the_spec_token_response(client, setup):
    response = password_grant(client, setup.public_app.client_id)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert set(body) == {"access_token", "token_type", "expires_in", "refresh_token", "scope", "created_at"}
    assert body["token_type"] == "bearer"
    assert body["expires_in"] == 7200
    assert isinstance(body["created_at"], int)
    assert body["scope"] == "public"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Content-Type"] == "application/json"


def test_form_body_works_too(client, setup):
    response = password_grant(client, setup.public_app.client_id, as_json=False, scope="public mqtt.read")
    assert response.status_code == 200
    assert response.get_json()["scope"] == "public mqtt.read"


def test_every_requested_scope_must_be_the_applications(client, setup):
    response = password_grant(client, setup.public_app.client_id, scope="public mqtt.write")
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_scope"


def test_only_service_accounts_may_use_it(client, setup):
    response = password_grant(client, setup.public_app.client_id, username="person@example.com")
    assert response.status_code == 400
    body = response.get_json()
    assert body["error"] == "invalid_grant"
    assert "service accounts" in body["error_description"]


@pytest.mark.parametrize(
    "username,password",
    [("service@example.com", "wrong password"), ("nobody@example.com", PASSWORD)],
)
def test_bad_credentials_are_invalid_grant(client, setup, username, password):
    response = password_grant(client, setup.public_app.client_id, username=username, password=password)
    assert response.status_code == 400
    assert response.get_json() == {
        "error": "invalid_grant",
        "error_description": "The username or password is incorrect.",
    }


def test_email_is_case_insensitive(client, setup):
    response = password_grant(client, setup.public_app.client_id, username="Service@Example.COM")
    assert response.status_code == 200


def test_disabled_service_account_is_refused(client, setup, world):
    world.update(User, setup.service.id, disabled=True)
    response = password_grant(client, setup.public_app.client_id)
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_grant"


def test_confidential_client_authenticates_with_basic(client, setup):
    app_ = setup.confidential_app
    basic = "Basic " + base64.b64encode(f"{app_.client_id}:{setup.client_secret}".encode()).decode()
    response = password_grant(client, None, auth=basic, as_json=False)
    assert response.status_code == 200, response.get_json()


def test_confidential_client_authenticates_with_body_secret(client, setup):
    response = password_grant(client, setup.confidential_app.client_id, client_secret=setup.client_secret)
    assert response.status_code == 200, response.get_json()


def test_confidential_client_without_secret_is_invalid_client(client, setup):
    response = password_grant(client, setup.confidential_app.client_id)
    assert response.status_code in (400, 401)
    assert response.get_json()["error"] == "invalid_client"


def test_confidential_client_with_wrong_secret_is_invalid_client(client, setup):
    response = password_grant(client, setup.confidential_app.client_id, client_secret="not-the-secret")
    assert response.get_json()["error"] == "invalid_client"


def test_client_of_another_domain_is_invalid_client(client, setup, world):
    other = world.domain("other.example.com")
    other_app, _ = world.application(other)
    response = password_grant(client, other_app.client_id)
    assert response.get_json()["error"] == "invalid_client"


def test_user_of_another_domain_cannot_get_a_token(client, setup, world):
    other = world.domain("other.example.com")
    world.user(other, "elsewhere@example.com", service_account=True)
    response = password_grant(client, setup.public_app.client_id, username="elsewhere@example.com")
    assert response.get_json()["error"] == "invalid_grant"


def test_password_in_query_string_is_refused(client, setup):
    response = client.post(
        "/auth/oauth/token",
        query_string={"password": PASSWORD},
        json={"grant_type": "password", "username": "service@example.com", "client_id": setup.public_app.client_id},
        headers=headers(),
    )
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"


def test_only_a_digest_of_the_tokens_is_stored(client, setup, world):
    body = password_grant(client, setup.public_app.client_id).get_json()
    [row] = world.query(select(Token))
    stored = " ".join(str(getattr(row, c.key)) for c in Token.__table__.columns)
    assert body["access_token"] not in stored
    assert body["refresh_token"] not in stored
    assert len(row.access_token_digest) == 64
