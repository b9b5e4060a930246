"""The admin API's applications: created with their secret shown once, regenerated, validated,
updated with an audit record, listed, and deleted with their tokens."""

from __future__ import annotations

from sqlalchemy import select

from authsvc.core.models import Application, AuditRecord, Token
from tests.helpers import PASSWORD, REDIRECT_URI, get_code, headers, signin
from tests.helpers.admin_api import API, call


def test_an_admin_creates_an_application_and_sees_its_secret_once(client, setup, keys, world):
    response = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        {
            "name": "Room booking",
            "redirect_uris": ["https://rooms.example.com/cb"],
            "scopes": "public mqtt.read",
            "confidential": True,
            "consent": True,
            "require_pkce": True,
        },
    )
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert set(created) >= {
        "id",
        "domain",
        "name",
        "client_id",
        "redirect_uris",
        "scopes",
        "confidential",
        "consent",
        "require_pkce",
        "created_at",
        "client_secret",
    }
    assert created["domain"] == str(setup.domain.id)
    assert created["redirect_uris"] == ["https://rooms.example.com/cb"]
    assert created["scopes"] == "public mqtt.read"
    fetched = call(client, "get", f"/oauth_apps/{created['id']}", keys.admin_key).get_json()
    assert "client_secret" not in fetched
    assert fetched["name"] == "Room booking"
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "application.created"))
    assert record.actor == f"api_key:{keys.admin_key.split('.')[0]}"
    assert record.details["after"]["name"] == "Room booking"
    assert created["client_secret"] not in str(record.details)


def test_the_new_secret_works_and_regenerate_replaces_it(client, setup, keys):
    created = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        {"name": "Backend", "redirect_uris": [REDIRECT_URI], "confidential": True},
    )
    app_ = created.get_json()

    def grant(secret):
        return client.post(
            "/auth/oauth/token",
            json={
                "grant_type": "password",
                "username": "service@example.com",
                "password": PASSWORD,
                "client_id": app_["client_id"],
                "client_secret": secret,
            },
            headers=headers(),
        )

    assert grant(app_["client_secret"]).status_code == 200
    regenerated = call(client, "post", f"/oauth_apps/{app_['id']}/regenerate", keys.admin_key).get_json()
    assert regenerated["client_secret"] != app_["client_secret"]
    assert grant(app_["client_secret"]).get_json()["error"] == "invalid_client"
    assert grant(regenerated["client_secret"]).status_code == 200


def test_validation_errors_are_422_with_a_message_per_field(client, setup, keys, world):
    response = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        {"name": "", "redirect_uris": ["javascript:alert(1)"], "scopes": "public root", "consent": "yes"},
    )
    assert response.status_code == 422
    body = response.get_json()
    assert body["error"] == "invalid_input"
    assert set(body["fields"]) == {"name", "redirect_uris", "scopes", "consent"}
    assert world.query(select(Application).where(Application.name == "")) == []


def test_update_changes_only_the_fields_given_and_records_before_and_after(client, setup, keys, world):
    path = f"/oauth_apps/{setup.public_app.id}"
    response = call(client, "patch", path, keys.admin_key, {"name": "Renamed", "require_pkce": True})
    assert response.status_code == 200
    updated = response.get_json()
    assert (updated["name"], updated["require_pkce"], updated["scopes"]) == ("Renamed", True, "public mqtt.read")
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "application.updated"))
    assert record.details["before"]["name"] == "Test app"
    assert record.details["after"]["name"] == "Renamed"


def test_deleting_an_application_revokes_its_tokens(client, setup, keys, world):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    token = client.post(
        "/auth/oauth/token",
        query_string={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": setup.public_app.client_id,
            "redirect_uri": REDIRECT_URI,
        },
        headers=headers(),
    ).get_json()["access_token"]
    response = call(client, "delete", f"/oauth_apps/{setup.public_app.id}", keys.admin_key)
    assert response.get_json() == {"deleted": str(setup.public_app.id), "revoked_tokens": 1}
    inspect = client.get(f"{API}/api_keys/inspect", headers=headers(Authorization=f"Bearer {token}"))
    assert inspect.status_code == 401
    assert world.query(select(Application).where(Application.id == setup.public_app.id)) == []
    assert world.query(select(Token).where(Token.application_id == setup.public_app.id)) == []


def test_listing_pages_and_filters_by_text(client, setup, keys, world):
    for i in range(5):
        world.application(setup.domain, name=f"Kiosk {i}")
    page = call(client, "get", "/oauth_apps?q=kiosk&per_page=2&page=2", keys.admin_key).get_json()
    assert (page["total"], page["page"], page["per_page"]) == (5, 2, 2)
    assert [a["name"] for a in page["items"]] == ["Kiosk 2", "Kiosk 3"]
    assert call(client, "get", "/oauth_apps?per_page=0", keys.admin_key).status_code == 400
    assert call(client, "get", "/oauth_apps?q=100%25_", keys.admin_key).get_json()["total"] == 0


def test_a_public_application_requires_pkce_unless_created_in_legacy_mode(client, setup, keys):
    body = {"redirect_uris": ["https://rooms.example.com/cb"]}
    default = call(client, "post", "/oauth_apps", keys.admin_key, body | {"name": "Default"}).get_json()
    legacy = call(client, "post", "/oauth_apps", keys.admin_key, body | {"name": "Legacy", "require_pkce": False})
    assert (default["require_pkce"], default["allow_plain_pkce"]) == (True, False)
    assert legacy.get_json()["require_pkce"] is False
    changed = call(client, "patch", f"/oauth_apps/{default['id']}", keys.admin_key, {"allow_plain_pkce": True})
    assert changed.get_json()["allow_plain_pkce"] is True


def test_an_application_may_ask_for_es256_id_tokens_and_nothing_else(client, setup, keys, world):
    body = {"name": "OIDC", "redirect_uris": ["https://rooms.example.com/cb"]}
    created = call(client, "post", "/oauth_apps", keys.admin_key, body | {"id_token_signed_response_alg": "ES256"})
    assert created.status_code == 201, created.get_json()
    refused = call(
        client,
        "patch",
        f"/oauth_apps/{created.get_json()['id']}",
        keys.admin_key,
        {"id_token_signed_response_alg": "none"},
    )
    assert refused.status_code == 422
    assert "RS256, ES256" in refused.get_json()["fields"]["id_token_signed_response_alg"]
    [stored] = world.query(select(Application).where(Application.name == "OIDC"))
    assert stored.id_token_signed_response_alg == "ES256"
