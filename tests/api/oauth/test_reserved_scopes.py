"""Reserved scopes: the admin API and introspection need `admin` on the token or API key, whatever its user may do."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from authsvc.core.models import ApiKey, Application, AuditRecord, User
from tests.helpers import HOST, PASSWORD, REDIRECT_URI, authorize, headers, signin
from tests.helpers.pages import csrf_token

API = "/api/engine/v2"


@pytest.fixture
def admin_token(client, setup, world):
    """A token of an admin user, for the scopes asked; the application may grant `admin`."""
    world.update(User, setup.service.id, admin=True)
    world.update(Application, setup.public_app.id, scopes="public mqtt.read admin")

    def issue(scope: str) -> str:
        response = client.post(
            "/auth/oauth/token",
            json={
                "grant_type": "password",
                "username": "service@example.com",
                "password": PASSWORD,
                "client_id": setup.public_app.client_id,
                "scope": scope,
            },
            headers=headers(),
        )
        assert response.status_code == 200, response.get_json()
        assert response.get_json()["scope"] == scope
        return response.get_json()["access_token"]

    return issue


def bearer(token: str) -> dict:
    return headers(Authorization=f"Bearer {token}")


def assert_insufficient_scope(response, scope: str = "admin") -> None:
    assert response.status_code == 403
    assert response.get_json()["error"] == "insufficient_scope"
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="insufficient_scope"' in challenge
    assert f'scope="{scope}"' in challenge


def test_a_public_only_token_of_an_admin_cannot_create_a_user(client, setup, world, admin_token):
    response = client.post(
        f"{API}/users",
        json={"email": "intruder@example.com", "password": "a long password", "admin": True},
        headers=bearer(admin_token("public")),
    )
    assert_insufficient_scope(response)
    assert world.query(select(User).where(User.email == "intruder@example.com")) == []
    assert world.query(select(AuditRecord).where(AuditRecord.event == "user.created")) == []


def test_a_public_only_token_of_an_admin_cannot_mint_an_api_key(client, setup, world, admin_token):
    response = client.post(
        f"{API}/api_keys",
        json={"user": "service@example.com", "name": "stolen", "permission": "admin", "scopes": "public admin"},
        headers=bearer(admin_token("public mqtt.read")),
    )
    assert_insufficient_scope(response)
    assert world.query(select(ApiKey)) == []


def test_a_public_only_token_of_an_admin_cannot_read_the_admin_api(client, setup, admin_token):
    for path in ("/users", "/api_keys", "/oauth_apps", "/audit", f"/users/{setup.person.id}"):
        assert_insufficient_scope(client.get(API + path, headers=bearer(admin_token("public"))))


def test_a_token_with_the_admin_scope_creates_a_user_and_an_admin_key(client, setup, world, admin_token):
    token = admin_token("public admin")
    created = client.post(
        f"{API}/users", json={"email": "new@example.com", "password": "a long password"}, headers=bearer(token)
    )
    assert created.status_code == 201, created.get_json()
    key = client.post(
        f"{API}/api_keys",
        json={"user": "service@example.com", "name": "automation", "permission": "admin", "scopes": "public admin"},
        headers=bearer(token),
    )
    assert key.status_code == 201, key.get_json()
    assert key.get_json()["scopes"] == "public admin"
    listed = client.get(f"{API}/users", headers=headers(**{"X-API-Key": key.get_json()["key"]}))
    assert listed.status_code == 200
    assert "new@example.com" in {u["email"] for u in listed.get_json()["items"]}


@pytest.mark.parametrize("permission", ["admin", "support"])
def test_an_api_key_without_the_admin_scope_is_refused(client, setup, world, permission):
    world.update(User, setup.person.id, admin=True, support=True)
    key = world.api_key(setup.person, scopes="public mqtt.read", permission=permission)
    listed = client.get(f"{API}/users", headers=headers(**{"X-API-Key": key}))
    assert_insufficient_scope(listed)
    created = client.post(f"{API}/users", json={"email": "x@example.com"}, headers=headers(**{"X-API-Key": key}))
    assert_insufficient_scope(created)
    assert world.query(select(User).where(User.email == "x@example.com")) == []


def test_the_admin_scope_gives_no_admin_rights_to_a_user_without_them(client, setup, world):
    key = world.api_key(setup.person, scopes="public admin")
    response = client.get(f"{API}/users", headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 403
    assert response.get_json()["error"] == "forbidden"


def test_a_public_only_token_of_an_admin_may_not_introspect(client, setup, admin_token):
    subject = admin_token("public")
    refused = client.post("/auth/oauth/introspect", data={"token": subject}, headers=bearer(subject))
    assert_insufficient_scope(refused)
    allowed = client.post(
        "/auth/oauth/introspect", data={"token": subject}, headers=bearer(admin_token("public admin"))
    )
    assert allowed.status_code == 200
    assert allowed.get_json()["active"] is True


def test_an_application_and_a_key_are_given_reserved_scopes_by_the_cli(runner, setup, world):
    created = runner.invoke(
        args=[
            "apps",
            "create",
            "--domain",
            HOST,
            "--name",
            "Ops",
            "--redirect-uri",
            "https://ops.example/cb",
            "--scopes",
            "public admin resource_token",
        ]
    )
    assert created.exit_code == 0, created.output
    [application] = world.query(
        select(Application).where(Application.client_id == json.loads(created.stdout)["client_id"])
    )
    assert application.scopes == "public admin resource_token"
    world.update(User, setup.person.id, admin=True)
    key = runner.invoke(
        args=[
            "api-keys",
            "create",
            "--domain",
            HOST,
            "--user",
            "person@example.com",
            "--name",
            "ops",
            "--scopes",
            "public admin",
            "--permission",
            "admin",
        ]
    )
    assert key.exit_code == 0, key.output
    [stored] = world.query(select(ApiKey))
    assert stored.scopes == "public admin"


def test_the_console_offers_and_gives_reserved_scopes_to_an_application(client, setup, world):
    world.update(User, setup.person.id, admin=True)
    signin(client)
    path = f"/auth/admin/domains/{setup.domain.id}/applications/new"
    page = client.get(path, headers=headers())
    assert '<code class="scope">admin</code>' in page.get_data(as_text=True)
    form = {"csrf_token": csrf_token(page), "name": "Ops", "redirect_uris": REDIRECT_URI, "scopes": "public admin"}
    response = client.post(path, data=form, headers=headers())
    assert response.status_code < 400, response.get_data(as_text=True)
    [application] = world.query(select(Application).where(Application.name == "Ops"))
    assert application.scopes == "public admin"


def test_a_domain_keeps_its_scope_list_while_applications_hold_reserved_scopes(client, setup, world):
    world.update(User, setup.person.id, admin=True)
    key = world.api_key(setup.person, scopes="public admin", permission="admin")
    response = client.patch(
        f"{API}/domains/{setup.domain.id}", json={"scopes": "public mqtt.read"}, headers=headers(**{"X-API-Key": key})
    )
    assert response.status_code == 200, response.get_json()
    assert client.get(f"{API}/scopes", headers=headers()).get_json()["scopes"] == ["public", "mqtt.read"]


def test_the_consent_page_names_reserved_scopes_with_a_warning(client, setup, world):
    application, _ = world.application(
        setup.domain, consent=True, name="Ops console", scopes="public admin resource_token"
    )
    signin(client)
    page = authorize(client, application.client_id, scope="public admin resource_token", state="s")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    warning = re.search(r'<p class="warning" id="reserved-scopes">(.*?)</p>', html, re.S)
    assert warning is not None
    assert "<code>admin</code>" in warning.group(1) and "<code>resource_token</code>" in warning.group(1)
    assert "Administer this domain" in html
    assert "external identity providers" in html


def test_the_consent_page_has_no_warning_for_ordinary_scopes(client, setup, world):
    application, _ = world.application(setup.domain, consent=True, scopes="public mqtt.read admin")
    signin(client)
    html = authorize(client, application.client_id, scope="public mqtt.read", state="s").get_data(as_text=True)
    assert "mqtt.read" in html
    assert "reserved-scopes" not in html
