"""Invitations: an admin invites an address (admin API, console, command line); the message a real SMTP server
(aiosmtpd on loopback) received carries a single-use link; the person sets a password or chooses a passkey, is
signed in, and their address is verified (the link went there).

A link that was used, expired or revoked makes nothing; only the secret's digest is stored; every change is in
the audit log.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord, User
from tests.helpers import HOST, PASSWORD, World, headers
from tests.helpers.pages import csrf_token, submit_login
from tests.helpers.smtp import deliver, emptied, html_of, link_in, text_of
from tests.helpers.sso import api

NEW_PASSWORD = "an invitee's own password"
DAY = 86400


@pytest.fixture
def app(mail_app):
    """The suite's app, mailing the SMTP server."""
    return mail_app


@pytest.fixture
def keys(world, setup):
    class Keys:
        admin = world.user(setup.domain, "admin@example.com", admin=True)
        admin_key = world.api_key(admin, scopes="public admin", permission="admin")
        support = world.user(setup.domain, "support@example.com", support=True)
        support_key = world.api_key(support, scopes="public admin", permission="support")

    return Keys


def invite(client, setup, keys, email="new@example.com", **body):
    return api(client, "post", f"/domains/{setup.domain.id}/invitations", keys.admin_key, {"email": email, **body})


def invitation_link(app, client, setup, keys, smtp, email="new@example.com", **body) -> str:
    created = invite(client, setup, keys, email, **body)
    assert created.status_code == 201, created.get_data(as_text=True)
    deliver(app)
    [message] = smtp.to(email)
    return link_in(message)


def follow(client, link: str):
    """Open the link as a browser does: the secret goes into the session, then the bare URL's page."""
    parts = urlsplit(link)
    assert parts.netloc == HOST, "links use the domain's own host"
    opened = client.get(f"{parts.path}?{parts.query}", headers=headers())
    assert opened.status_code == 303
    return opened, client.get(opened.headers["Location"], headers=headers())


def accept(client, page, password=NEW_PASSWORD, confirm=None):
    data = {"csrf_token": csrf_token(page), "password": password, "confirm": confirm or password}
    return client.post("/auth/invitation", data=data, headers=headers())


def users_named(world, email):
    return world.query(select(User).where(User.email == email))


def test_an_invited_person_sets_a_password_is_signed_in_and_verified(app, client, setup, keys, smtp, world):
    created = invite(client, setup, keys, "New@Example.com", name="New Person", role="support")
    body = created.get_json()
    assert created.status_code == 201 and body["email"] == "new@example.com" and body["state"] == "pending"
    assert "link" not in body, "with mail, the link goes only to the address"
    assert body["expires_at"] - body["created_at"] == 7 * DAY
    deliver(app)
    [message] = smtp.to("new@example.com")
    link = link_in(message)
    assert link.startswith(f"https://{HOST}/auth/invitation?token=") and link.replace("&", "&amp;") in html_of(message)
    assert "New Person" in text_of(message)

    opened, page = follow(client, link)
    assert opened.headers["Referrer-Policy"] == "no-referrer" and urlsplit(opened.headers["Location"]).query == ""
    assert page.status_code == 200 and "new@example.com" in page.get_data(as_text=True)
    assert link.split("token=")[1] not in page.get_data(as_text=True)
    done = accept(client, page)
    assert done.status_code == 303, done.get_data(as_text=True)
    # Signed in: the sign-in page shows the account.
    signed = client.get(done.headers["Location"], headers=headers()).get_data(as_text=True)
    assert "You are signed in" in signed and "new@example.com" in signed
    [user] = users_named(world, "new@example.com")
    assert user.email_verified and user.support and not user.admin and user.name == "New Person"
    assert submit_login(app.test_client(), "new@example.com", NEW_PASSWORD).status_code == 303
    listed = api(client, "get", f"/domains/{setup.domain.id}/invitations", keys.support_key).get_json()["items"]
    assert [(i["state"], i["user"]) for i in listed] == [("accepted", str(user.id))]
    events = [r.event for r in world.query(select(AuditRecord).order_by(AuditRecord.id))]
    assert {"invitation.created", "invitation.accepted", "user.created"} <= set(events)


def test_an_accepted_invitation_makes_nothing_the_second_time(app, client, setup, keys, smtp, world):
    link = invitation_link(app, client, setup, keys, smtp)
    _, page = follow(client, link)
    assert accept(client, page).status_code == 303
    other = app.test_client()
    _, again = follow(other, link)
    assert again.status_code == 400 and "does not work" in again.get_data(as_text=True)
    data = {"password": "yet another password", "confirm": "yet another password"}
    assert other.post("/auth/invitation", data=data, headers=headers()).status_code == 400
    assert len(users_named(world, "new@example.com")) == 1


def test_a_form_posted_after_the_link_was_used_makes_nothing(app, client, setup, keys, smtp, world):
    link = invitation_link(app, client, setup, keys, smtp)
    _, first = follow(client, link)
    second_browser = app.test_client()
    _, second = follow(second_browser, link)
    assert accept(client, first).status_code == 303
    late = accept(second_browser, second, "a different password")
    assert late.status_code in (400, 409) and "does not work" in late.get_data(as_text=True)
    [user] = users_named(world, "new@example.com")
    assert submit_login(app.test_client(), "new@example.com", NEW_PASSWORD).status_code == 303


def test_an_expired_invitation_makes_nothing(app, client, setup, keys, smtp, world, clock):
    link = invitation_link(app, client, setup, keys, smtp)
    clock.advance(7 * DAY + 1)
    _, page = follow(client, link)
    assert page.status_code == 400 and "expired" in page.get_data(as_text=True)
    assert users_named(world, "new@example.com") == []
    listed = api(client, "get", f"/domains/{setup.domain.id}/invitations", keys.admin_key).get_json()["items"]
    assert listed[0]["state"] == "expired"


def test_a_revoked_invitation_makes_nothing(app, client, setup, keys, smtp, world):
    link = invitation_link(app, client, setup, keys, smtp)
    _, page = follow(client, link)
    [item] = api(client, "get", f"/domains/{setup.domain.id}/invitations", keys.admin_key).get_json()["items"]
    revoked = api(client, "delete", f"/domains/{setup.domain.id}/invitations/{item['id']}", keys.admin_key)
    assert revoked.status_code == 200 and revoked.get_json()["state"] == "revoked"
    refused = accept(client, page)
    assert refused.status_code == 400 and "does not work" in refused.get_data(as_text=True)
    assert users_named(world, "new@example.com") == []
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "invitation.revoked"))
    assert record.target == f"invitation:{item['id']}"


def test_a_resend_sends_a_new_link_and_voids_the_old_one(app, client, setup, keys, smtp, world, clock):
    first = invitation_link(app, client, setup, keys, smtp)
    [item] = api(client, "get", f"/domains/{setup.domain.id}/invitations", keys.admin_key).get_json()["items"]
    clock.advance(8 * DAY)
    resent = api(client, "post", f"/domains/{setup.domain.id}/invitations/{item['id']}/resend", keys.admin_key)
    assert resent.status_code == 200 and resent.get_json()["state"] == "pending"
    assert resent.get_json()["expires_at"] > item["expires_at"]
    deliver(app)
    second = link_in(smtp.to("new@example.com")[1])
    assert second != first
    assert follow(app.test_client(), first)[1].status_code == 400
    _, page = follow(client, second)
    assert accept(client, page).status_code == 303
    assert world.query(select(AuditRecord).where(AuditRecord.event == "invitation.resent"))


def test_only_the_secrets_digest_is_stored(app, client, setup, keys, smtp, world):
    from authsvc.account.invitations import Invitation

    link = invitation_link(app, client, setup, keys, smtp)
    token = link.split("token=")[1]
    [stored] = world.query(select(Invitation))
    assert token not in json.dumps(stored.as_json()) and len(stored.digest) == 64 and token != stored.digest
    events = world.query(select(AuditRecord).where(AuditRecord.event == "invitation.created"))
    assert token not in json.dumps(events[0].details)


def test_the_invitees_password_meets_the_password_rules(app, client, setup, keys, smtp, world):
    link = invitation_link(app, client, setup, keys, smtp)
    _, page = follow(client, link)
    short = accept(client, page, "short")
    assert short.status_code == 400 and "at least 8 characters" in short.get_data(as_text=True)
    assert users_named(world, "new@example.com") == []
    assert accept(client, page).status_code == 303


def test_choosing_a_passkey_makes_the_account_and_opens_the_passkey_registration(app, client, setup, keys, smtp, world):
    link = invitation_link(app, client, setup, keys, smtp)
    _, page = follow(client, link)
    chosen = client.post("/auth/invitation/passkey", data={"csrf_token": csrf_token(page)}, headers=headers())
    assert chosen.status_code == 303 and chosen.headers["Location"].endswith("/auth/mfa/passkey")
    registration = client.get(chosen.headers["Location"], headers=headers())
    assert registration.status_code == 200 and "webauthn-options" in registration.get_data(as_text=True)
    [user] = users_named(world, "new@example.com")
    assert user.email_verified and user.password_hash is None


def test_inviting_an_existing_account_or_twice_is_refused(app, client, setup, keys, smtp):
    taken = invite(client, setup, keys, "person@example.com")
    assert taken.status_code == 422 and "email" in taken.get_json()["fields"]
    assert invite(client, setup, keys).status_code == 201
    assert invite(client, setup, keys).status_code == 409


@pytest.mark.parametrize(
    ("body", "field"),
    [({"email": "not an address"}, "email"), ({"email": "a@example.com", "role": "owner"}, "role"), ({}, "email")],
)
def test_bad_invitations_are_refused_field_by_field(client, setup, keys, body, field):
    refused = api(client, "post", f"/domains/{setup.domain.id}/invitations", keys.admin_key, body)
    assert refused.status_code == 422 and field in refused.get_json()["fields"]


def test_support_users_read_invitations_but_do_not_invite(client, setup, keys):
    path = f"/domains/{setup.domain.id}/invitations"
    assert api(client, "post", path, keys.support_key, {"email": "x@example.com"}).status_code == 403
    assert api(client, "get", path, keys.support_key).status_code == 200


def test_an_invitation_accepted_under_a_policy_asks_for_a_second_factor(app, client, setup, keys, smtp, world):
    from authsvc.core.models import Domain

    world.update(Domain, setup.domain.id, mfa_require="all")
    link = invitation_link(app, client, setup, keys, smtp)
    _, page = follow(client, link)
    answer = accept(client, page)
    assert answer.status_code == 200 and client.get_cookie("user", domain=HOST) is None
    assert "authenticator" in answer.get_data(as_text=True).lower()


def test_the_command_line_invites_and_prints_the_link_only_without_mail(make_app, smtp):
    from tests.helpers.smtp import mail_config

    mailing = emptied(make_app(**mail_config(smtp)))
    World(mailing).domain()
    result = mailing.test_cli_runner().invoke(
        args=["users", "invite", "--domain", HOST, "--email", "cli@example.com", "--name", "Cli", "--admin"]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert set(printed) == {"id", "email", "expires_at"} and printed["email"] == "cli@example.com"
    deliver(mailing)
    assert len(smtp.to("cli@example.com")) == 1

    silent = emptied(make_app(AUTHSVC_ENV="production", AUTHSVC_SMTP_URL=None))
    World(silent).domain()
    result = silent.test_cli_runner().invoke(args=["users", "invite", "--domain", HOST, "--email", "x@example.com"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["link"].startswith(f"https://{HOST}/auth/invitation?token=")
    both = silent.test_cli_runner().invoke(
        args=["users", "invite", "--domain", HOST, "--email", "y@example.com", "--admin", "--support"]
    )
    assert both.exit_code != 0 and "cannot go together" in both.output


def test_the_console_invites_lists_and_revokes(app, client, setup, keys, smtp, world):
    from tests.helpers import signin

    signin(client, "admin@example.com", PASSWORD)
    base = f"/auth/admin/domains/{setup.domain.id}/invitations"
    form = client.get(f"{base}/new", headers=headers())
    assert form.status_code == 200
    data = {"csrf_token": csrf_token(form), "email": "console@example.com", "name": "C", "role": "user", "submit": "1"}
    sent = client.post(f"{base}/new", data=data, headers=headers())
    assert sent.status_code == 303
    listed = client.get(base, headers=headers()).get_data(as_text=True)
    assert "console@example.com" in listed and "pending" in listed
    deliver(app)
    assert len(smtp.to("console@example.com")) == 1
    [item] = api(client, "get", f"/domains/{setup.domain.id}/invitations", keys.admin_key).get_json()["items"]
    confirm = client.get(f"{base}/{item['id']}/revoke", headers=headers())
    revoked = client.post(f"{base}/{item['id']}/revoke", data={"csrf_token": csrf_token(confirm)}, headers=headers())
    assert revoked.status_code == 303
    assert "revoked" in client.get(base, headers=headers()).get_data(as_text=True)
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "invitation.revoked"))
    assert record.actor == f"user:{keys.admin.id}"
