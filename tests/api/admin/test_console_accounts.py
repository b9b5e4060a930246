"""The console's users, their API keys, and the SSO providers people sign in through: each action
working and audited, secrets shown once, and confirmations before anything is removed."""

from __future__ import annotations

import re

from sqlalchemy import select

from authsvc.core.models import ApiKey, ExternalIdentity, SsoProvider, User
from tests.helpers import HOST, authorize, headers, signin
from tests.helpers.console import SECRET, as_admin, audit, get, password_grant, submit, text
from tests.helpers.pages import INSPECT

# Users


def users_path(setup, user=None):
    base = f"/domains/{setup.domain.id}/users"
    return base if user is None else f"{base}/{user.id}"


def test_an_admin_creates_a_user_and_duplicates_are_refused(client, setup, people, world):
    as_admin(client)
    data = {"email": "New@Example.com", "name": "New", "password": "a long password", "service_account": "y"}
    response = submit(client, users_path(setup) + "/new", data)
    assert response.status_code == 303
    [created] = world.query(select(User).where(User.email == "new@example.com"))
    assert (created.name, created.service_account, created.admin) == ("New", True, False)
    assert (
        password_grant(
            client, setup.public_app.client_id, username="new@example.com", password="a long password"
        ).status_code
        == 200
    )
    [record] = audit(world, "user.created")
    assert record.actor == f"user:{people.admin.id}" and "a long password" not in str(record.details)
    again = submit(client, users_path(setup) + "/new", data)
    assert again.status_code == 422
    assert "a user with this e-mail already exists" in text(again)
    short = submit(client, users_path(setup) + "/new", {"email": "x@example.com", "password": "short"})
    assert short.status_code == 422 and "at least 8 characters" in text(short)


def test_an_admin_marks_a_user_as_a_service_account(client, setup, people, world):
    as_admin(client)
    assert password_grant(client, setup.public_app.client_id, username="person@example.com").status_code == 400
    response = submit(
        client,
        users_path(setup, setup.person),
        {"email": "person@example.com", "name": "Person", "service_account": "y"},
    )
    assert response.status_code == 303
    assert password_grant(client, setup.public_app.client_id, username="person@example.com").status_code == 200
    [record] = audit(world, "user.updated")
    assert record.details["before"]["service_account"] is False
    assert record.details["after"]["service_account"] is True


def test_an_admin_resets_a_password_which_ends_the_users_sessions(client, setup, people, world, app):
    person = app.test_client()
    signin(person)
    assert authorize(person, setup.public_app.client_id).status_code == 302
    as_admin(client)
    path = users_path(setup, setup.person)
    response = submit(client, path + "/password", {"password": "a brand new password"}, page=get(client, path))
    assert response.status_code == 303
    assert authorize(person, setup.public_app.client_id).status_code == 303, "the old session has ended"
    signin(person, password="a brand new password")
    [record] = audit(world, "user.updated")
    assert record.details["after"]["password_changed"] is True
    assert "a brand new password" not in str(record.details)
    bad = submit(client, path + "/password", {"password": "short"}, page=get(client, path))
    assert bad.status_code == 422 and "at least 8 characters" in text(bad)


def test_the_tokens_a_console_password_reset_revokes_are_recorded_as_the_signed_in_admins_doing(
    client, setup, people, world
):
    """The audit trail says who ended a user's tokens: in the console that is the admin of the session,
    though the revocation's record is written below the page, where no credential is at hand."""
    assert password_grant(client, setup.public_app.client_id).status_code == 200
    [service] = world.query(select(User).where(User.email == "service@example.com"))
    [admin] = world.query(select(User).where(User.email == "admin@example.com"))
    as_admin(client)
    path = users_path(setup, service)
    response = submit(client, path + "/password", {"password": "a brand new password"}, page=get(client, path))
    assert response.status_code == 303
    [record] = audit(world, "token.revoked")
    assert (record.actor, record.target) == (f"user:{admin.id}", f"user:{service.id}")
    assert record.details == {"count": 1, "via": "password_changed"}


def test_disabling_a_user_asks_first_and_enabling_brings_them_back(client, setup, people, world):
    as_admin(client)
    path = users_path(setup, setup.person)
    confirm = get(client, path + "/disable")
    assert "Disable person@example.com?" in text(confirm)
    assert world.query(select(User.disabled).where(User.id == setup.person.id)) == [False]
    assert submit(client, path + "/disable", page=confirm).status_code == 303
    assert world.query(select(User.disabled).where(User.id == setup.person.id)) == [True]
    [record] = audit(world, "user.updated")
    assert record.details["after"]["disabled"] is True
    page = get(client, path)
    assert "Enable user" in text(page)
    assert submit(client, path + "/enable", page=page).status_code == 303
    assert world.query(select(User.disabled).where(User.id == setup.person.id)) == [False]


# API keys


def test_an_api_key_is_shown_once_and_revoked_after_asking(client, setup, people, world):
    as_admin(client)
    keys = f"/domains/{setup.domain.id}/api_keys"
    response = submit(
        client,
        keys + "/new",
        {
            "user": "person@example.com",
            "name": "kiosk",
            "scopes": "public",
            "permission": "user",
            "expires_in_days": "30",
        },
    )
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    value = re.search(SECRET, text(response)).group(1)
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": value})).status_code == 200
    [stored] = world.query(select(ApiKey).where(ApiKey.name == "kiosk"))
    assert stored.expires_at is not None and stored.user_id == setup.person.id
    listed = get(client, keys)
    assert stored.id in text(listed) and "person@example.com" in text(listed)
    assert value not in listed.get_data(as_text=True)
    assert audit(world, "api_key.created")[0].actor == f"user:{people.admin.id}"

    confirm = get(client, f"{keys}/{stored.id}/revoke")
    assert "Revoke the API key kiosk?" in text(confirm)
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": value})).status_code == 200, "asking changed nothing"
    assert submit(client, f"{keys}/{stored.id}/revoke", page=confirm).status_code == 303
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": value})).status_code == 401
    assert len(audit(world, "api_key.revoked")) == 1
    assert "revoked" in text(get(client, keys))


def test_an_api_key_for_an_unknown_user_is_a_field_error(client, setup, people):
    as_admin(client)
    response = submit(
        client,
        f"/domains/{setup.domain.id}/api_keys/new",
        {"user": "nobody@example.com", "name": "x", "scopes": "public", "permission": "user"},
    )
    assert response.status_code == 422
    assert "no such user in the domain" in text(response)


# SSO providers


def test_an_admin_adds_a_microsoft_provider_and_sees_what_to_register(client, setup, people, world):
    as_admin(client)
    sso = f"/domains/{setup.domain.id}/sso"
    response = submit(
        client,
        sso + "/new",
        {
            "name": "Acme (Microsoft)",
            "client_id": "entra-client",
            "client_secret": "provider-secret",
            "tenant": "contoso.onmicrosoft.com",
        },
    )
    assert response.status_code == 303
    [provider] = world.query(select(SsoProvider))
    assert (provider.preset, provider.tenant) == ("microsoft", "contoso.onmicrosoft.com")
    page = text(client.get(response.headers["Location"], headers=headers()))
    assert f'<code id="callback-url">https://{HOST}/auth/oauth2/callback</code>' in page
    assert "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/adminconsent?client_id=entra-client" in page
    assert "Nobody has signed in through this provider yet" in page
    assert "provider-secret" not in page
    assert "provider-secret" not in str([r.details for r in audit(world, "sso.created")])

    # After a sign-in that was not granted everything, the page says what is missing (`sso check`).
    world.save(
        ExternalIdentity(
            provider_id=provider.id,
            user_id=setup.person.id,
            subject="s1",
            access_token_encrypted="x",
            granted_scopes="openid profile email offline_access "
            "Calendars.ReadWrite Calendars.ReadWrite.Shared Contacts.Read User.Read.All",
        )
    )
    page = text(get(client, f"{sso}/{provider.id}"))
    missing = re.search(r'<ul class="missing" id="missing-scopes">(.*?)</ul>', page).group(1)
    assert re.findall(r"<code>([^<]+)</code>", missing) == ["Place.Read.All", "Group.Read.All"]


def test_a_microsoft_provider_needs_a_tenant(client, setup, people, world):
    as_admin(client)
    response = submit(
        client,
        f"/domains/{setup.domain.id}/sso/new",
        {"name": "Entra", "client_id": "c", "client_secret": "s", "tenant": ""},
    )
    assert response.status_code == 422
    assert "a Microsoft tenant id or domain is needed" in text(response)
    assert world.query(select(SsoProvider)) == []


def test_deleting_a_provider_asks_first(client, setup, people, world):
    as_admin(client)
    sso = f"/domains/{setup.domain.id}/sso"
    submit(client, sso + "/new", {"name": "Entra", "client_id": "c", "client_secret": "s", "tenant": "organizations"})
    [provider] = world.query(select(SsoProvider))
    confirm = get(client, f"{sso}/{provider.id}/delete")
    assert "Delete Entra?" in text(confirm)
    assert world.query(select(SsoProvider.id)) == [provider.id]
    assert submit(client, f"{sso}/{provider.id}/delete", page=confirm).status_code == 303
    assert world.query(select(SsoProvider.id)) == []
    assert len(audit(world, "sso.deleted")) == 1
