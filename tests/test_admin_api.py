"""The admin API: Domains -> Applications (and users, keys, SSO) from scripts, with audit."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import ApiKey, Application, AuditRecord, Consent, Domain, Token, User
from tests.conftest import HOST, OTHER_HOST, PASSWORD, REDIRECT_URI, get_code, headers, signin

API = "/api/engine/v2"
ADMIN_SCOPES = "public admin"


@pytest.fixture
def keys(world, setup):
    """API keys of an admin, a support user, a plain user, and a system admin of another domain."""
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    support = world.user(setup.domain, "support@example.com", support=True)
    other = world.domain(OTHER_HOST)
    root = world.user(other, "root@example.com", admin=True, system_admin=True)

    class Keys:
        admin_user = admin
        admin_key = world.api_key(admin, scopes=ADMIN_SCOPES, permission="admin")
        support_key = world.api_key(support, scopes=ADMIN_SCOPES, permission="support")
        user_key = world.api_key(setup.person)
        system_key = world.api_key(root, scopes=ADMIN_SCOPES, permission="admin")
        other_domain = other

    return Keys


def call(client, method, path, key, json=None, host=HOST, **kwargs):
    return getattr(client, method)(API + path, json=json, headers=headers(host, **{"X-API-Key": key}), **kwargs)


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


@pytest.mark.parametrize("payload", [b"{nope", b"[1,2]", b"null"])
def test_malformed_bodies_are_4xx(client, setup, keys, payload):
    response = client.post(
        f"{API}/oauth_apps",
        data=payload,
        content_type="application/json",
        headers=headers(**{"X-API-Key": keys.admin_key}),
    )
    assert response.status_code in (400, 422)


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


def test_support_may_read_but_not_change(client, setup, keys):
    assert call(client, "get", "/oauth_apps", keys.support_key).status_code == 200
    assert call(client, "get", f"/users/{setup.person.id}", keys.support_key).status_code == 200
    response = call(client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.support_key, {"name": "x"})
    assert response.status_code == 403
    assert response.get_json()["error"] == "forbidden"
    assert call(client, "delete", f"/users/{setup.person.id}", keys.support_key).status_code == 403


@pytest.mark.parametrize(
    "method,path",
    [("get", "/oauth_apps"), ("get", "/users"), ("get", "/audit"), ("post", "/domains"), ("get", "/domains")],
)
def test_everyone_else_gets_403(client, setup, keys, method, path):
    response = call(client, method, path, keys.user_key, {} if method == "post" else None)
    assert response.status_code == 403
    assert response.get_json()["error"] == "forbidden"


def test_a_user_key_of_an_admin_user_is_not_an_admin_credential(client, setup, keys, world):
    capped = world.api_key(keys.admin_user, scopes=ADMIN_SCOPES, permission="user")
    assert call(client, "get", "/oauth_apps", capped).status_code == 403


def test_no_credential_is_401(client, setup):
    assert client.get(f"{API}/oauth_apps", headers=headers()).status_code == 401


def test_an_admin_token_works_like_an_admin_key(client, setup, keys, world):
    world.update(User, setup.service.id, admin=True)
    world.update(Application, setup.public_app.id, scopes=ADMIN_SCOPES)
    token = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
            "scope": ADMIN_SCOPES,
        },
        headers=headers(),
    ).get_json()["access_token"]
    response = client.get(f"{API}/users", headers=headers(Authorization=f"Bearer {token}"))
    assert response.status_code == 200


def test_domain_admins_see_only_their_domain(client, setup, keys, world):
    other_app, _ = world.application(keys.other_domain, name="Elsewhere")
    listed = call(client, "get", "/oauth_apps", keys.admin_key).get_json()
    assert {a["name"] for a in listed["items"]} == {"Test app", "Confidential"}
    assert call(client, "get", f"/oauth_apps/{other_app.id}", keys.admin_key).status_code == 404
    assert call(client, "delete", f"/oauth_apps/{other_app.id}", keys.admin_key).status_code == 404
    assert [d["host"] for d in call(client, "get", "/domains", keys.admin_key).get_json()["items"]] == [HOST]


def test_system_admins_reach_every_domain(client, setup, keys, world):
    listed = call(client, "get", "/oauth_apps", keys.system_key, host=OTHER_HOST).get_json()
    assert listed["total"] == 2
    response = call(
        client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.system_key, {"name": "By root"}, host=OTHER_HOST
    )
    assert response.status_code == 200
    filtered = call(client, "get", f"/oauth_apps?domain={setup.domain.id}", keys.system_key, host=OTHER_HOST)
    assert filtered.get_json()["total"] == 2


def test_listing_pages_and_filters_by_text(client, setup, keys, world):
    for i in range(5):
        world.application(setup.domain, name=f"Kiosk {i}")
    page = call(client, "get", "/oauth_apps?q=kiosk&per_page=2&page=2", keys.admin_key).get_json()
    assert (page["total"], page["page"], page["per_page"]) == (5, 2, 2)
    assert [a["name"] for a in page["items"]] == ["Kiosk 2", "Kiosk 3"]
    assert call(client, "get", "/oauth_apps?per_page=0", keys.admin_key).status_code == 400
    assert call(client, "get", "/oauth_apps?q=100%25_", keys.admin_key).get_json()["total"] == 0


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


def test_domains_are_created_by_system_admins_and_deleted_only_when_empty_unless_forced(client, setup, keys, world):
    assert call(client, "post", "/domains", keys.admin_key, {"name": "X", "host": "x.example"}).status_code == 403
    created = call(
        client, "post", "/domains", keys.system_key, {"name": "New", "host": "New.Example"}, host=OTHER_HOST
    ).get_json()
    assert created["host"] == "new.example"
    refused = call(client, "delete", f"/domains/{setup.domain.id}", keys.system_key, host=OTHER_HOST)
    assert refused.status_code == 409
    forced = call(client, "delete", f"/domains/{setup.domain.id}?force=true", keys.system_key, host=OTHER_HOST)
    assert forced.status_code == 200
    assert world.query(select(Domain).where(Domain.id == setup.domain.id)) == []
    assert world.query(select(User).where(User.domain_id == setup.domain.id)) == []
    assert world.query(select(Consent)) == []
    empty = call(client, "delete", f"/domains/{created['id']}", keys.system_key, host=OTHER_HOST)
    assert empty.status_code == 200


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


def test_the_audit_log_lists_changes_with_filters(client, setup, keys):
    call(client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {"name": "A"})
    call(client, "patch", f"/users/{setup.person.id}", keys.admin_key, {"name": "B"})
    everything = call(client, "get", "/audit", keys.admin_key).get_json()
    assert [r["event"] for r in everything["items"]][:2] == ["user.updated", "application.updated"]
    only_apps = call(client, "get", "/audit?event=application.*", keys.admin_key).get_json()
    assert {r["event"] for r in only_apps["items"]} == {"application.updated"}
    by_target = call(client, "get", f"/audit?target=user:{setup.person.id}", keys.admin_key).get_json()
    assert by_target["total"] == 1
    assert call(client, "get", "/audit?since=abc", keys.admin_key).status_code == 400
    other = call(client, "get", "/audit", keys.system_key, host=OTHER_HOST).get_json()
    assert other["total"] >= 2, "system admins see every domain"


def test_unknown_ids_are_404(client, setup, keys):
    for path in ("/oauth_apps/999999", "/users/abc", "/api_keys/nope", "/sso/" + "x" * 40, "/domains/0"):
        assert call(client, "get", path, keys.admin_key).status_code == 404


def test_a_duplicate_domain_host_is_a_field_error(client, setup, keys):
    response = call(client, "post", "/domains", keys.system_key, {"name": "Again", "host": HOST}, host=OTHER_HOST)
    assert response.status_code == 422
    assert "host" in response.get_json()["fields"]


@pytest.mark.parametrize("record_id", ["²", "١٢", "0x1", "-1"])
def test_odd_ids_are_404_not_500(client, setup, keys, record_id):
    assert call(client, "get", f"/users/{record_id}", keys.admin_key).status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/users/2147483648",
        "/oauth_apps/99999999999",
        "/domains/999999999999999999",
        "/users/2147483648/revoke",
        "/oauth_apps/9999999999/regenerate",
    ],
)
def test_ids_past_sql_integer_are_404_not_500(client, setup, keys, path):
    """PostgreSQL refuses a number past INTEGER (a 500) rather than finding nothing."""
    method = "post" if path.endswith(("/revoke", "/regenerate")) else "get"
    response = call(client, method, path, keys.admin_key)
    assert response.status_code == 404
    assert response.get_json()["error"] == "not_found"


@pytest.mark.parametrize("path", ["/api_keys/%00", "/sso/a%00b", "/api_keys/k%C3%A9y"])
def test_key_and_provider_ids_other_than_ascii_letters_and_digits_are_404_not_500(client, setup, keys, path):
    """NUL reached PostgreSQL, which refuses it in a string (a 500)."""
    for method in ("get", "delete"):
        assert call(client, method, path, keys.admin_key).status_code == 404


@pytest.mark.parametrize(
    "query",
    [
        "/oauth_apps?domain=²",
        "/audit?domain=²",
        "/users?domain=2147483648",
        "/audit?domain=99999999999",
        "/api_keys?page=²",
        "/sso?per_page=١",
        "/audit?since=²",
        "/audit?until=99999999999",
    ],
)
def test_odd_domain_filters_and_numbers_in_the_query_are_400_not_500(client, setup, keys, query):
    response = call(client, "get", query, keys.system_key, host=OTHER_HOST)
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"


@pytest.mark.parametrize("domain", ["²", "١", "2147483648", "99999999999999999999"])
def test_a_body_naming_an_odd_domain_id_is_a_field_error_not_500(client, setup, keys, domain):
    response = call(
        client, "post", "/oauth_apps", keys.admin_key, {"name": "x", "redirect_uris": [REDIRECT_URI], "domain": domain}
    )
    assert response.status_code == 422
    assert response.get_json()["fields"] == {"domain": "no such domain"}


@pytest.mark.parametrize("user", ["²", "2147483648", "99999999999999999999"])
def test_an_api_key_for_an_odd_user_id_is_a_field_error_not_500(client, setup, keys, user):
    response = call(client, "post", "/api_keys", keys.admin_key, {"user": user, "name": "k"})
    assert response.status_code == 422
    assert response.get_json()["fields"] == {"user": "no such user in the domain"}


def test_an_api_key_expiry_past_sql_integer_is_a_field_error_not_500(client, setup, keys):
    body = {"user": "person@example.com", "name": "k"}
    for expires_at in (2**31, 2**40):
        created = call(client, "post", "/api_keys", keys.admin_key, body | {"expires_at": expires_at})
        assert created.status_code == 422 and "expires_at" in created.get_json()["fields"]
    key = call(client, "post", "/api_keys", keys.admin_key, body | {"expires_at": 2**31 - 1}).get_json()
    assert key["expires_at"] == 2**31 - 1
    for expires_at in (2**31, -1):
        changed = call(client, "patch", f"/api_keys/{key['id']}", keys.admin_key, {"expires_at": expires_at})
        assert changed.status_code == 422 and "expires_at" in changed.get_json()["fields"]
    assert call(client, "patch", f"/api_keys/{key['id']}", keys.admin_key, {"expires_at": None}).status_code == 200


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


def test_an_admin_cannot_disable_or_demote_themselves(client, setup, keys):
    path = f"/users/{keys.admin_user.id}"
    disabled = call(client, "patch", path, keys.admin_key, {"disabled": True})
    assert disabled.status_code == 422 and "disabled" in disabled.get_json()["fields"]
    demoted = call(client, "patch", path, keys.admin_key, {"admin": False})
    assert demoted.status_code == 422 and "admin" in demoted.get_json()["fields"]


def test_a_key_carries_no_more_than_its_user_holds(client, setup, keys):
    response = call(
        client, "post", "/api_keys", keys.admin_key, {"user": "person@example.com", "name": "k", "permission": "admin"}
    )
    assert response.status_code == 422
    assert "not an admin" in response.get_json()["fields"]["permission"]


def test_a_domain_admin_cannot_take_over_a_system_admin_of_the_domain(client, setup, keys, world):
    root_here = world.user(setup.domain, "root-here@example.com", admin=True, system_admin=True)
    path = f"/users/{root_here.id}"
    assert call(client, "patch", path, keys.admin_key, {"password": "attacker password"}).status_code == 403
    assert call(client, "delete", path, keys.admin_key).status_code == 403
    assert call(client, "post", f"{path}/revoke", keys.admin_key).status_code == 403
    key = call(
        client, "post", "/api_keys", keys.admin_key, {"user": str(root_here.id), "name": "x", "permission": "admin"}
    )
    assert key.status_code == 403
    assert world.query(select(ApiKey).where(ApiKey.user_id == root_here.id)) == []
    by_root = call(client, "patch", path, keys.system_key, {"name": "Root"}, host=OTHER_HOST)
    assert by_root.status_code == 200


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


def test_null_for_a_required_field_is_a_missing_field_not_500(client, setup, keys, world):
    for path, body in (
        ("/oauth_apps", {"name": None, "redirect_uris": ["https://rooms.example.com/cb"]}),
        ("/domains", {"name": None, "host": "new.example.com"}),
        ("/users", {"email": None, "password": "long enough password"}),
        ("/api_keys", {"user": "person@example.com", "name": None}),
    ):
        key, host = (keys.system_key, OTHER_HOST) if path == "/domains" else (keys.admin_key, HOST)
        response = call(client, "post", path, key, body, host=host)
        assert response.status_code == 422, (path, response.get_data(as_text=True)[:300])
        assert response.get_json()["fields"] == {next(k for k, v in body.items() if v is None): "is required"}


def test_null_redirect_uris_creates_no_application(client, setup, keys, world):
    before = world.query(select(Application.id))
    response = call(client, "post", "/oauth_apps", keys.admin_key, {"name": "No URI", "redirect_uris": None})
    assert response.status_code == 422
    assert response.get_json()["fields"] == {"redirect_uris": "is required"}
    assert world.query(select(Application.id)) == before


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
