"""A forgotten password, end to end: the sign-in page's link, the request, the message a real SMTP server
(aiosmtpd on loopback) received, the link in it, the new password, and what the new password ends.

Nobody learns from the answer whether an address has an account; the link works once, for a while, and its
secret never stays in the address bar or goes out in a Referer.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from authsvc.account.invitations import Invitation
from authsvc.core.models import AuditRecord, ExternalIdentity, MfaFactor, SsoProvider, User
from tests.helpers import HOST, PASSWORD, get_code, headers, signin
from tests.helpers.id_tokens import exchange, refresh
from tests.helpers.pages import csrf_token, submit_login
from tests.helpers.smtp import deliver, html_of, link_in, outbox_items, text_of

NEW_PASSWORD = "a new password, long enough"


@pytest.fixture
def app(mail_app):
    """The suite's app, mailing the SMTP server."""
    return mail_app


def ask(client, email: str):
    page = client.get("/auth/password/forgot", headers=headers())
    assert page.status_code == 200
    return client.post(
        "/auth/password/forgot", data={"csrf_token": csrf_token(page), "email": email}, headers=headers()
    )


def follow(client, link: str):
    """Open the link as a browser does: the secret goes into the session, then the bare URL's form."""
    parts = urlsplit(link)
    assert parts.netloc == HOST, "links use the domain's own host"
    opened = client.get(f"{parts.path}?{parts.query}", headers=headers())
    return opened, client.get(opened.headers["Location"], headers=headers()) if opened.status_code == 303 else None


def set_password(client, form_page, password=NEW_PASSWORD, confirm=None):
    data = {"csrf_token": csrf_token(form_page), "password": password, "confirm": confirm or password}
    return client.post("/auth/password/reset", data=data, headers=headers())


def reset_link(app, client, smtp, email="person@example.com") -> str:
    assert ask(client, email).status_code == 200
    deliver(app)
    # The link's message (a person enrolling a second factor first was sent that factor's notice too).
    [message] = [m for m in smtp.to(email) if m["Subject"] == "Reset your password"]
    return link_in(message)


def test_the_sign_in_page_links_to_the_forgotten_password_page(client, setup):
    page = client.get("/auth/login", headers=headers()).get_data(as_text=True)
    assert 'href="/auth/password/forgot"' in page


def test_a_forgotten_password_is_set_again_through_the_link_sent_by_smtp(app, client, setup, smtp, world):
    signin(client)  # a session the reset must end
    link = reset_link(app, client, smtp)
    [message] = smtp.to("person@example.com")
    assert message["Message-ID"] and message["From"].addresses[0].addr_spec == "accounts@example.com"
    assert link in text_of(message) and link.replace("&", "&amp;") in html_of(message)
    token = link.split("token=")[1]

    opened, form = follow(client, link)
    assert opened.status_code == 303 and opened.headers["Referrer-Policy"] == "no-referrer"
    assert urlsplit(opened.headers["Location"]).query == "", "the secret leaves the address bar"
    assert form.status_code == 200 and form.headers["Referrer-Policy"] == "no-referrer"
    assert token not in form.get_data(as_text=True)

    done = set_password(client, form)
    assert done.status_code == 200, done.get_data(as_text=True)
    assert "Password changed" in done.get_data(as_text=True)
    # Every session ended: the page asks to sign in again.
    assert "Sign in</h1>" in client.get("/auth/login", headers=headers()).get_data(as_text=True)
    assert submit_login(client, password=PASSWORD).status_code == 401
    assert submit_login(client, password=NEW_PASSWORD).status_code == 303
    # The notice of the change, and nothing in the outbox that still carries the link.
    deliver(app)
    notices = [m for m in smtp.to("person@example.com") if m["Subject"] == "Your password was changed"]
    assert len(notices) == 1 and "token=" not in text_of(notices[0])
    assert all(item.payload is None for item in outbox_items(app)), "a sent message is not kept"
    [stored] = world.query(select(AuditRecord).where(AuditRecord.event == "user.password_reset"))
    assert stored.target == f"user:{setup.person.id}"


def test_the_link_works_once(app, client, setup, smtp):
    link = reset_link(app, client, smtp)
    _, form = follow(client, link)
    assert set_password(client, form).status_code == 200
    again, page = follow(client, link)
    assert page.status_code == 400 and "does not work" in page.get_data(as_text=True)
    assert set_password(client, form, "yet another password").status_code == 400


def test_the_link_expires(app, client, setup, smtp, clock):
    link = reset_link(app, client, smtp)
    clock.advance(1801)
    _, page = follow(client, link)
    assert page.status_code == 400


def test_only_its_digest_is_stored(app, client, setup, smtp, world):
    from authsvc.account.links import AccountLink

    link = reset_link(app, client, smtp)
    token = link.split("token=")[1]
    [stored] = world.query(select(AccountLink))
    assert token not in (stored.digest, stored.email) and len(stored.digest) == 64


def test_the_new_password_meets_the_password_rules(app, client, setup, smtp):
    link = reset_link(app, client, smtp)
    _, form = follow(client, link)
    short = set_password(client, form, "short")
    assert short.status_code == 400 and "at least 8 characters" in short.get_data(as_text=True)
    differ = set_password(client, form, NEW_PASSWORD, "something else entirely")
    assert differ.status_code == 400 and "differ" in differ.get_data(as_text=True)
    assert set_password(client, form).status_code == 200, "a refused password leaves the link usable"


def test_a_reset_ends_the_users_refresh_tokens(app, client, setup, smtp):
    signin(client)
    code = get_code(client, setup.confidential_app.client_id)
    tokens = exchange(client, setup.confidential_app, setup.client_secret, code).get_json()
    assert refresh(client, setup.confidential_app, setup.client_secret, tokens["refresh_token"]).status_code == 200
    fresh = refresh(client, setup.confidential_app, setup.client_secret, tokens["refresh_token"]).get_json()
    link = reset_link(app, client, smtp)
    _, form = follow(client, link)
    assert set_password(client, form).status_code == 200
    refused = refresh(client, setup.confidential_app, setup.client_secret, fresh.get("refresh_token", ""))
    assert refused.status_code == 400 and refused.get_json()["error"] == "invalid_grant"


def test_a_reset_does_not_skip_the_second_factor(app, client, setup, smtp, enrolled):
    link = reset_link(app, client, smtp)
    _, form = follow(client, link)
    assert set_password(client, form).status_code == 200
    signed = submit_login(client, password=NEW_PASSWORD)
    assert signed.status_code == 200 and "code" in signed.get_data(as_text=True).lower()
    assert client.get_cookie("user", domain=HOST) is None, "no session before the second factor"


def test_an_account_without_a_password_is_told_how_it_signs_in(app, client, setup, smtp, world):
    user = world.save(User(domain_id=setup.domain.id, email="sso@example.com", name="Single sign-on only"))
    common = {"domain_id": setup.domain.id, "kind": "oidc", "client_id": "c", "client_secret_encrypted": "x"}
    world.save(SsoProvider(id="corp", name="Corp Login", scopes="openid", **common))
    world.save(ExternalIdentity(provider_id="corp", user_id=user.id, subject="s-1"))
    assert ask(client, "sso@example.com").status_code == 200
    deliver(app)
    [message] = smtp.to("sso@example.com")
    assert "no password here" in text_of(message) and "token=" not in text_of(message)
    assert "Sign in with Corp Login" in text_of(message)


def test_an_account_with_only_a_passkey_is_told_to_use_it(app, client, setup, smtp, world):
    user = world.save(User(domain_id=setup.domain.id, email="keyholder@example.com", name="Passkey only"))
    world.save(MfaFactor(user_id=user.id, kind="webauthn", name="Laptop", credential_id="c-1", confirmed=True))
    assert ask(client, "keyholder@example.com").status_code == 200
    deliver(app)
    [message] = smtp.to("keyholder@example.com")
    assert "passkey" in text_of(message) and "token=" not in text_of(message)


def test_an_account_made_without_a_password_gets_no_link_that_would_go_around_its_single_sign_on(
    app, client, setup, smtp, world
):
    """Made by an admin or SCIM for a single sign-on not linked yet: a password set by e-mail would bypass it."""
    world.save(User(domain_id=setup.domain.id, email="waiting@example.com", name="Provisioned"))
    assert ask(client, "waiting@example.com").status_code == 200
    deliver(app)
    [message] = smtp.to("waiting@example.com")
    assert "Ask an administrator" in text_of(message) and "token=" not in text_of(message)


def test_an_invitee_with_no_way_in_gets_a_link_that_sets_a_first_password(app, client, setup, smtp, world):
    """An invitee who chose a passkey and left before registering one is not stuck: the link sets a password."""
    user = world.save(User(domain_id=setup.domain.id, email="stranded@example.com", name="No way in"))
    world.save(
        Invitation(
            id="joined-with-a-passkey",
            domain_id=setup.domain.id,
            email=user.email,
            name=user.name,
            role="user",
            digest="0" * 64,
            created_by="admin",
            created_at=0,
            expires_at=1,
            accepted_at=0,
            user_id=user.id,
        )
    )
    assert ask(client, "stranded@example.com").status_code == 200
    deliver(app)
    [message] = smtp.to("stranded@example.com")
    _, form = follow(client, link_in(message))
    assert set_password(client, form).status_code == 200
    signed = submit_login(client, email="stranded@example.com", password=NEW_PASSWORD)
    assert signed.status_code in (200, 302, 303) and client.get_cookie("user", domain=HOST) is not None


def test_known_and_unknown_addresses_get_the_same_answer_after_the_same_work(app, client, setup, smtp):
    known = ask(client, "person@example.com")
    unknown = ask(client, "nobody@example.com")
    assert known.status_code == unknown.status_code == 200

    def shown(response, address):
        body = response.get_data(as_text=True).replace(address, "ADDRESS")
        return re.sub(r'value="[^"]+"', "", body)

    assert shown(known, "person@example.com") == shown(unknown, "nobody@example.com")
    # The request's work is the same: one question queued each, answered off the request path.
    questions = outbox_items(app, "password_reset_request")
    assert len(questions) == 2 and len(outbox_items(app)) == 2
    deliver(app)
    assert smtp.to("nobody@example.com") == [] and len(smtp.to("person@example.com")) == 1


def test_asking_is_rate_limited_per_address_and_per_client(make_app, smtp, setup):
    from tests.helpers import HttpsClient, World
    from tests.helpers.smtp import emptied, mail_config

    app = emptied(
        make_app(
            **mail_config(smtp),
            AUTHSVC_ACCOUNT_MAIL_RATE_LIMIT="2/minute",
            AUTHSVC_ACCOUNT_MAIL_CLIENT_RATE_LIMIT="5/minute",
        )
    )
    world = World(app)
    world.domain()
    app.test_client_class = HttpsClient
    client = app.test_client()
    # Two links an address a minute; then other addresses, until the client's fifth request of the minute.
    assert [ask(client, "person@example.com").status_code for _ in range(3)] == [200, 200, 429]
    assert [ask(client, f"other{n}@example.com").status_code for n in range(3)] == [200, 200, 429]


def test_links_are_deleted_a_day_after_they_expire(app, client, setup, smtp, world, clock):
    from authsvc.account.links import AccountLink

    reset_link(app, client, smtp)
    clock.advance(1800 + 86400 - 10)
    deliver(app)  # a new sender purges at its first round
    assert len(world.query(select(AccountLink))) == 1
    clock.advance(20)
    deliver(app)
    assert world.query(select(AccountLink)) == []
