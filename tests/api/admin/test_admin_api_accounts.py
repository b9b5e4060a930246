"""The admin API's users, their API keys, and the SSO providers people sign in through: secrets
shown once or never, and the checks a provider's settings get."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import ApiKey, AuditRecord
from tests.helpers import HOST, headers
from tests.helpers.admin_api import API, call

# Users and API keys


def test_users_create_update_disable_and_reset_password(client, setup, keys, world):
    created = call(
        client,
        "post",
        "/users",
        keys.admin_key,
        {"email": "New@Example.com", "password": "a long password", "name": "New", "service_account": True},
    )
    assert created.status_code == 201
    user = created.get_json()
    assert (user["email"], user["service_account"]) == ("new@example.com", True)
    duplicate = call(client, "post", "/users", keys.admin_key, {"email": "new@example.com", "password": "x" * 8})
    assert duplicate.status_code == 422 and "email" in duplicate.get_json()["fields"]
    token = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "new@example.com",
            "password": "a long password",
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
    ).get_json()["access_token"]
    reset = call(client, "patch", f"/users/{user['id']}", keys.admin_key, {"password": "another password"})
    assert reset.status_code == 200
    assert client.get(f"{API}/api_keys/inspect", headers=headers(Authorization=f"Bearer {token}")).status_code == 401
    disabled = call(client, "patch", f"/users/{user['id']}", keys.admin_key, {"disabled": True})
    assert disabled.get_json()["disabled"] is True
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "user.updated").limit(1))
    assert "another password" not in str(record.details)
    assert call(client, "patch", f"/users/{user['id']}", keys.admin_key, {"system_admin": True}).status_code == 422


def test_api_keys_are_shown_once_and_revoked_by_delete(client, setup, keys, world):
    created = call(
        client,
        "post",
        "/api_keys",
        keys.admin_key,
        {"user": "person@example.com", "name": "kiosk", "scopes": "public", "permission": "user"},
    )
    assert created.status_code == 201
    key = created.get_json()
    assert key["key"].startswith(key["id"] + ".")
    assert "key" not in call(client, "get", f"/api_keys/{key['id']}", keys.admin_key).get_json()
    assert client.get(f"{API}/api_keys/inspect", headers=headers(**{"X-API-Key": key["key"]})).status_code == 200
    revoked = call(client, "delete", f"/api_keys/{key['id']}", keys.admin_key)
    assert revoked.get_json()["revoked"] is True
    assert client.get(f"{API}/api_keys/inspect", headers=headers(**{"X-API-Key": key["key"]})).status_code == 401
    [stored] = world.query(select(ApiKey).where(ApiKey.id == key["id"]))
    assert stored.revoked_at is not None


# SSO providers


def test_sso_providers_through_the_api_never_show_the_secret(client, setup, keys, world):
    created = call(
        client,
        "post",
        "/sso",
        keys.admin_key,
        {
            "name": "Entra",
            "client_id": "cid",
            "client_secret": "provider-secret",
            "preset": "microsoft",
            "tenant": "contoso.onmicrosoft.com",
        },
    )
    assert created.status_code == 201, created.get_json()
    provider = created.get_json()
    assert provider["callback_url"] == f"https://{HOST}/auth/oauth2/callback"
    assert provider["admin_consent_url"].startswith("https://login.microsoftonline.com/contoso.onmicrosoft.com/")
    assert "Place.Read.All" in provider["scopes"]
    assert provider["missing_scopes"] is None
    assert "provider-secret" not in str(provider)
    updated = call(client, "patch", f"/sso/{provider['id']}", keys.admin_key, {"client_secret": "rotated", "name": "E"})
    assert updated.get_json()["name"] == "E"
    records = world.query(select(AuditRecord).where(AuditRecord.event.like("sso.%")))
    assert "rotated" not in str([r.details for r in records]) and "provider-secret" not in str(
        [r.details for r in records]
    )
    bad = call(client, "post", "/sso", keys.admin_key, {"name": "x", "client_id": "c", "client_secret": "s"})
    assert bad.status_code == 422 and "issuer" in bad.get_json()["fields"]
    assert call(client, "delete", f"/sso/{provider['id']}", keys.admin_key).status_code == 200


@pytest.mark.parametrize(
    "field,url",
    [("issuer", "http://[::1"), ("issuer", "https://idp.example:99999"), ("token_url", "https://[nope/token")],
)
def test_a_malformed_provider_url_is_a_field_error_not_500(client, setup, keys, field, url):
    body = {
        "name": "IdP",
        "client_id": "c",
        "client_secret": "s",
        "authorize_url": "https://idp.example/a",
        "token_url": "https://idp.example/t",
        "userinfo_url": "https://idp.example/u",
    }
    response = call(client, "post", "/sso", keys.admin_key, body | {field: url})
    assert response.status_code == 422
    assert "not a valid URL" in response.get_json()["fields"][field]


def test_a_microsoft_tenant_is_ascii_as_in_the_cli(client, setup, keys):
    response = call(
        client,
        "post",
        "/sso",
        keys.admin_key,
        {"name": "Entra", "client_id": "c", "client_secret": "s", "preset": "microsoft", "tenant": "ᾢ"},
    )
    assert response.status_code == 422
    assert "tenant" in response.get_json()["fields"]


def test_trusting_email_from_any_entra_tenant_is_a_field_error(client, setup, keys):
    response = call(
        client,
        "post",
        "/sso",
        keys.admin_key,
        {
            "name": "E",
            "client_id": "c",
            "client_secret": "s",
            "preset": "microsoft",
            "tenant": "common",
            "trust_email": True,
        },
    )
    assert response.status_code == 422
    assert "tid match rule" in response.get_json()["fields"]["trust_email"]
