"""The console at /auth/admin/: who may see what, and the applications' pages (each action working
and audited, forms and confirmations).

Users, API keys and SSO providers in the console are tests/api/admin/test_console_accounts.py.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, AuditRecord
from tests.helpers import HOST, OTHER_HOST, REDIRECT_URI, headers, signin
from tests.helpers.console import (
    CONSOLE,
    SECRET,
    app_path,
    as_admin,
    audit,
    get,
    new_application,
    password_grant,
    submit,
    text,
)
from tests.helpers.pages import csrf_token

# Who may see what


def test_without_a_session_the_console_sends_to_sign_in_and_back(client, setup):
    response = get(client, f"/domains/{setup.domain.id}/users?q=ann")
    assert response.status_code == 303
    location = urlsplit(response.headers["Location"])
    assert location.path == "/auth/login"
    assert parse_qs(location.query)["continue"] == [f"{CONSOLE}/domains/{setup.domain.id}/users?q=ann"]


def test_a_user_who_is_neither_admin_nor_support_gets_a_403_page(client, setup, people):
    signin(client)
    response = get(client, "/")
    assert response.status_code == 403
    assert response.mimetype == "text/html"
    assert "Not allowed" in text(response)
    assert get(client, app_path(setup)).status_code == 403


def test_console_pages_are_protected_like_the_sign_in_page(client, setup, people):
    response = get(as_admin(client), app_path(setup))
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]


def test_an_admin_sees_only_their_domain(client, setup, people):
    as_admin(client)
    domains = text(get(client, "/"))
    assert HOST in domains and OTHER_HOST not in domains
    listed = text(get(client, app_path(setup)))
    assert "Test app" in listed and "Confidential" in listed and "Elsewhere" not in listed
    assert "admin@example.com" in listed, "the header names the signed-in user"
    assert 'href="/auth/logout' in listed, "and offers to sign out"


def test_another_domain_and_its_records_are_404(client, setup, people):
    as_admin(client)
    assert get(client, f"/domains/{people.other_domain.id}/applications").status_code == 404
    assert get(client, f"{app_path(setup)}/{people.other_app.id}").status_code == 404
    assert get(client, f"/domains/{people.other_domain.id}/applications/{people.other_app.id}").status_code == 404
    assert get(client, f"{app_path(setup)}/{people.other_app.id}/delete").status_code == 404
    assert get(client, "/domains/999999/users").status_code == 404
    assert get(client, "/domains/abc/users").status_code == 404
    assert get(client, "/domains/\u00b2/users").status_code == 404
    assert get(client, f"/domains/{setup.domain.id}/users/\u00b2").status_code == 404


@pytest.mark.parametrize(
    "query", ["page=0", "page=abc", "page=%C2%B2", "page=" + "9" * 5000, "page=9999999", "q=%00", "q=" + "x" * 5000]
)
def test_odd_list_parameters_show_a_page_not_an_error(client, setup, people, query):
    as_admin(client)
    response = client.get(f"{CONSOLE}{app_path(setup)}?{query}", headers=headers())
    assert response.status_code == 200


def test_a_system_admin_reaches_every_domain(client, setup, people, world):
    as_admin(client, "root@other.example.com", host=OTHER_HOST)
    domains = text(get(client, "/", host=OTHER_HOST))
    assert HOST in domains and OTHER_HOST in domains
    path = app_path(setup, setup.public_app)
    response = submit(
        client, path, {"name": "Renamed by root", "redirect_uris": REDIRECT_URI, "scopes": "public"}, host=OTHER_HOST
    )
    assert response.status_code == 303
    [record] = audit(world, "application.updated")
    assert record.actor == f"user:{people.root.id}"
    assert record.domain_id == setup.domain.id


def test_support_sees_everything_read_only(client, setup, people, world):
    key = world.api_key(setup.person)
    as_admin(client, "support@example.com")
    domain = f"/domains/{setup.domain.id}"
    for path in (
        "/",
        app_path(setup),
        app_path(setup, setup.confidential_app),
        f"{domain}/users",
        f"{domain}/users/{setup.person.id}",
        f"{domain}/api_keys",
        f"{domain}/sso",
    ):
        response = get(client, path)
        assert response.status_code == 200, path
        assert 'method="post"' not in response.get_data(as_text=True), f"{path} shows a form"
    assert "New application" not in text(get(client, app_path(setup)))
    for path in (
        app_path(setup) + "/new",
        app_path(setup, setup.public_app) + "/delete",
        f"{domain}/users/new",
        f"{domain}/users/{setup.person.id}/disable",
        f"{domain}/api_keys/{key.split('.')[0]}/revoke",
    ):
        assert get(client, path).status_code == 403, path
    # A valid CSRF token of the session (the sign-in page has one) does not make the change allowed.
    token = csrf_token(client.get("/auth/login", headers=headers()))
    data = {"name": "x", "redirect_uris": REDIRECT_URI}
    assert submit(client, app_path(setup, setup.public_app), data, token=token).status_code == 403
    assert submit(client, app_path(setup, setup.public_app) + "/delete", token=token).status_code == 403
    assert (
        submit(client, f"{domain}/users/{setup.person.id}/password", {"password": "x" * 12}, token=token).status_code
        == 403
    )
    assert world.query(select(Application.name).where(Application.id == setup.public_app.id)) == ["Test app"]


# Applications


def test_an_admin_creates_a_public_application(client, setup, people, world):
    as_admin(client)
    response = new_application(
        client,
        setup,
        redirect_uris=f"{REDIRECT_URI}\r\n\r\n  https://app.example.com/other  \r\n",
        scopes="public mqtt.read",
        require_pkce="y",
    )
    assert response.status_code == 303
    [created] = world.query(select(Application).where(Application.name == "Room booking"))
    assert created.redirect_uris == [REDIRECT_URI, "https://app.example.com/other"]
    assert (created.scopes, created.require_pkce, created.consent, created.confidential) == (
        "public mqtt.read",
        True,
        False,
        False,
    )
    assert response.headers["Location"] == f"{CONSOLE}{app_path(setup, created)}"
    page = text(client.get(response.headers["Location"], headers=headers()))
    assert f'<code id="client-id">{created.client_id}</code>' in page
    assert "Application Room booking created." in page
    [record] = audit(world, "application.created")
    assert record.actor == f"user:{people.admin.id}"
    assert record.details["after"]["client_id"] == created.client_id


def test_a_confidential_application_shows_its_secret_once(client, setup, people, world):
    as_admin(client)
    response = new_application(client, setup, confidential="y")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    secret = re.search(SECRET, text(response)).group(1)
    [created] = world.query(select(Application).where(Application.name == "Room booking"))
    assert password_grant(client, created.client_id, secret).status_code == 200
    for path in (app_path(setup), app_path(setup, created)):
        assert secret not in get(client, path).get_data(as_text=True)
    assert secret not in str([r.details for r in world.query(select(AuditRecord))])
    assert secret not in str(client.get_cookie("authsvc_csrf", domain=HOST).value)


def test_validation_messages_are_shown_with_their_fields(client, setup, people, world):
    as_admin(client)
    response = new_application(client, setup, name=" ", redirect_uris="javascript:alert(1)", scopes="public root")
    assert response.status_code == 422
    page = text(response)
    assert "must not be empty" in page
    assert "uses a scheme that cannot be a redirect URI" in page
    assert "unknown scope 'root'" in page
    assert "javascript:alert(1)" in page, "the form keeps what was typed"
    assert world.query(select(Application).where(Application.name.in_(["", " "]))) == []
    empty = new_application(client, setup, redirect_uris="")
    assert empty.status_code == 422 and "must not be empty" in text(empty)


def test_an_admin_edits_name_redirect_uris_scopes_consent_and_pkce(client, setup, people, world):
    as_admin(client)
    path = app_path(setup, setup.public_app)
    page = get(client, path)
    assert REDIRECT_URI in text(page)
    response = submit(
        client,
        path,
        {
            "name": "Kiosk",
            "redirect_uris": "https://kiosk.example.com/cb\nhttp://127.0.0.1:8080/cb",
            "scopes": "public mqtt.write",
            "consent": "y",
            "require_pkce": "y",
        },
        page=page,
    )
    assert response.status_code == 303
    [stored] = world.query(select(Application).where(Application.id == setup.public_app.id))
    assert (stored.name, stored.redirect_uris, stored.scopes, stored.consent, stored.require_pkce) == (
        "Kiosk",
        ["https://kiosk.example.com/cb", "http://127.0.0.1:8080/cb"],
        "public mqtt.write",
        True,
        True,
    )
    [record] = audit(world, "application.updated")
    assert record.details["before"]["name"] == "Test app" and record.details["after"]["name"] == "Kiosk"
    # Unticking a box turns the option off again.
    submit(client, path, {"name": "Kiosk", "redirect_uris": REDIRECT_URI, "scopes": "public"})
    [stored] = world.query(select(Application).where(Application.id == setup.public_app.id))
    assert (stored.consent, stored.require_pkce) == (False, False)


def test_forms_refuse_a_missing_or_forged_csrf_token(client, setup, people, world):
    as_admin(client)
    for token in ("", "forged"):
        data = {"name": "Sneaky", "redirect_uris": REDIRECT_URI}
        response = submit(client, app_path(setup) + "/new", data, token=token)
        assert response.status_code == 400
        assert "The form expired" in text(response)
        deleted = submit(client, app_path(setup, setup.public_app) + "/delete", token=token)
        assert deleted.status_code == 400
    assert world.query(select(Application).where(Application.name == "Sneaky")) == []
    assert world.query(select(Application.id).where(Application.id == setup.public_app.id)) == [setup.public_app.id]


def test_deleting_an_application_asks_first(client, setup, people, world):
    as_admin(client)
    path = app_path(setup, setup.public_app)
    assert f'href="{CONSOLE}{path}/delete"' in get(client, path).get_data(as_text=True), "a link, not a form"
    confirm = get(client, path + "/delete")
    assert confirm.status_code == 200
    assert "Delete Test app?" in text(confirm) and setup.public_app.client_id in text(confirm)
    assert world.query(select(Application.id).where(Application.id == setup.public_app.id)), "nothing deleted yet"
    response = submit(client, path + "/delete", page=confirm)
    assert response.status_code == 303
    assert response.headers["Location"] == CONSOLE + app_path(setup)
    assert world.query(select(Application.id).where(Application.id == setup.public_app.id)) == []
    [record] = audit(world, "application.deleted")
    assert record.actor == f"user:{people.admin.id}"
    assert "Application Test app deleted" in text(client.get(response.headers["Location"], headers=headers()))


def test_regenerating_a_secret_asks_then_shows_the_new_one_once(client, setup, people, world):
    as_admin(client)
    app_, old = setup.confidential_app, setup.client_secret
    path = app_path(setup, app_) + "/regenerate"
    confirm = get(client, path)
    assert "stops working at once" in text(confirm)
    assert password_grant(client, app_.client_id, old).status_code == 200, "asking changed nothing"
    response = submit(client, path, page=confirm)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    new = re.search(SECRET, text(response)).group(1)
    assert password_grant(client, app_.client_id, old).get_json()["error"] == "invalid_client"
    assert password_grant(client, app_.client_id, new).status_code == 200
    assert new not in get(client, app_path(setup, app_)).get_data(as_text=True)
    assert len(audit(world, "application.secret_regenerated")) == 1


def test_a_conflict_shows_the_page_again_with_its_message(client, setup, people):
    as_admin(client)
    response = submit(client, app_path(setup, setup.public_app) + "/regenerate")
    assert response.status_code == 409
    assert "a public application has no secret" in text(response)


def test_names_are_escaped(client, setup, people, world):
    world.application(setup.domain, name="<script>alert(1)</script>")
    page = get(as_admin(client), app_path(setup)).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
