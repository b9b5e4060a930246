"""Sign-up, per domain, off by default: /auth/signup makes an account that cannot sign in until its owner follows
the link a real SMTP server (aiosmtpd on loopback) received. ``restricted`` takes only the listed e-mail domains.

Nobody learns from the answer whether an address is taken: the page and the request's work are the same, and the
owner of a taken address gets a message instead. Sign-ups are rate limited per client and per address.
"""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord, Domain, User
from tests.helpers import HOST, PASSWORD, HttpsClient, World, headers
from tests.helpers.console import audit
from tests.helpers.pages import csrf_token, submit_login
from tests.helpers.smtp import deliver, emptied, link_in, mail_config, outbox_items, text_of
from tests.helpers.sso import api

NEW_PASSWORD = "a sign-up password"


@pytest.fixture
def app(mail_app):
    """The suite's app, mailing the SMTP server."""
    return mail_app


@pytest.fixture
def open_signup(world, setup):
    world.update(Domain, setup.domain.id, signup="open")
    return setup


def sign_up(client, email="new@example.com", password=NEW_PASSWORD, name="New Person", confirm=None):
    page = client.get("/auth/signup", headers=headers())
    assert page.status_code == 200, page.get_data(as_text=True)
    data = {
        "csrf_token": csrf_token(page),
        "name": name,
        "email": email,
        "password": password,
        "confirm": confirm or password,
    }
    return client.post("/auth/signup", data=data, headers=headers())


def confirm_address(client, link):
    path = link.split(HOST, 1)[1]
    opened = client.get(path, headers=headers())
    form = client.get(opened.headers["Location"], headers=headers())
    return client.post("/auth/email/verify", data={"csrf_token": csrf_token(form)}, headers=headers())


def test_sign_up_is_off_by_default_and_the_sign_in_page_does_not_offer_it(client, setup):
    assert client.get("/auth/signup", headers=headers()).status_code == 404
    posted = client.post("/auth/signup", data={"email": "new@example.com"}, headers=headers())
    assert posted.status_code == 404
    assert "/auth/signup" not in client.get("/auth/login", headers=headers()).get_data(as_text=True)


def test_a_new_account_signs_in_only_once_its_address_is_confirmed(app, client, open_signup, smtp, world):
    assert 'href="/auth/signup"' in client.get("/auth/login", headers=headers()).get_data(as_text=True)
    answered = sign_up(client)
    assert answered.status_code == 200 and "Check your inbox" in answered.get_data(as_text=True)
    deliver(app)
    [user] = world.query(select(User).where(User.email == "new@example.com"))
    assert not user.email_verified and user.signup_pending and user.name == "New Person"
    [message] = smtp.to("new@example.com")
    link = link_in(message)
    assert link.startswith(f"https://{HOST}/auth/email/verify?token=")

    # The right password says what to do, without a session; a wrong one is the usual answer.
    early = submit_login(app.test_client(), "new@example.com", NEW_PASSWORD)
    assert early.status_code == 403 and "Confirm your e-mail address" in early.get_data(as_text=True)
    wrong = submit_login(app.test_client(), "new@example.com", "not the password")
    assert wrong.status_code == 401 and "Confirm" not in wrong.get_data(as_text=True)
    programmatic = app.test_client().post(
        "/auth/signin", query_string={"email": "new@example.com", "password": NEW_PASSWORD}, headers=headers()
    )
    assert programmatic.status_code == 403 and programmatic.get_json()["error"] == "email_unverified"

    assert confirm_address(client, link).status_code == 200
    [user] = world.query(select(User).where(User.email == "new@example.com"))
    assert user.email_verified and not user.signup_pending
    assert submit_login(app.test_client(), "new@example.com", NEW_PASSWORD).status_code == 303
    events = {r.event for r in world.query(select(AuditRecord))}
    assert {"user.signed_up", "user.email_verified"} <= events


def test_a_taken_address_gets_the_same_answer_and_its_owner_a_message(app, client, open_signup, smtp, world):
    new = sign_up(client, "new@example.com")
    taken = sign_up(client, "person@example.com")
    assert new.status_code == taken.status_code == 200

    def shown(response, address):
        body = response.get_data(as_text=True).replace(address, "ADDRESS")
        return re.sub(r'value="[^"]+"', "", body)

    assert shown(new, "new@example.com") == shown(taken, "person@example.com")
    # The same work on the request: one question queued each, answered off the request path.
    assert len(outbox_items(app, "signup_request")) == 2 and len(outbox_items(app)) == 2
    deliver(app)
    [owner_message] = smtp.to("person@example.com")
    assert "already" in text_of(owner_message) and "token=" not in text_of(owner_message)
    # The account is as it was: its password still works, the sign-up's does not.
    assert submit_login(app.test_client(), "person@example.com", PASSWORD).status_code == 303
    assert submit_login(app.test_client(), "person@example.com", NEW_PASSWORD).status_code == 401
    assert len(world.query(select(User).where(User.email == "person@example.com"))) == 1


def test_signing_up_again_before_confirming_sends_a_new_link_and_keeps_the_first_password(
    app, client, open_signup, smtp, world
):
    sign_up(client, password=NEW_PASSWORD)
    sign_up(client, password="someone else's password")
    deliver(app)
    first, second = smtp.to("new@example.com")
    assert link_in(first) != link_in(second)
    assert confirm_address(client, link_in(second)).status_code == 200
    assert submit_login(app.test_client(), "new@example.com", "someone else's password").status_code == 401
    assert submit_login(app.test_client(), "new@example.com", NEW_PASSWORD).status_code == 303


def test_a_password_reset_confirms_a_sign_ups_address(app, client, open_signup, smtp, world):
    sign_up(client)
    deliver(app)
    smtp.clear()
    page = client.get("/auth/password/forgot", headers=headers())
    data = {"csrf_token": csrf_token(page), "email": "new@example.com"}
    assert client.post("/auth/password/forgot", data=data, headers=headers()).status_code == 200
    deliver(app)
    link = link_in(smtp.to("new@example.com")[0])
    opened = client.get(link.split(HOST, 1)[1], headers=headers())
    form = client.get(opened.headers["Location"], headers=headers())
    reset = {"csrf_token": csrf_token(form), "password": "the reset password", "confirm": "the reset password"}
    assert client.post("/auth/password/reset", data=reset, headers=headers()).status_code == 200
    assert submit_login(app.test_client(), "new@example.com", "the reset password").status_code == 303


def test_restricted_sign_up_takes_only_the_listed_email_domains(app, client, setup, smtp, world):
    world.update(Domain, setup.domain.id, signup="restricted", signup_email_domains="example.org staff.example")
    page = client.get("/auth/signup", headers=headers()).get_data(as_text=True)
    assert "example.org" in page
    refused = sign_up(client, "outsider@example.com")
    assert refused.status_code == 400 and "example.org" in refused.get_data(as_text=True)
    assert sign_up(client, "insider@staff.example").status_code == 200
    deliver(app)
    assert smtp.to("outsider@example.com") == [] and len(smtp.to("insider@staff.example")) == 1
    assert world.query(select(User).where(User.email == "outsider@example.com")) == []


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"email": "not an address"}, "e-mail"),
        ({"password": "short", "confirm": "short"}, "at least 8 characters"),
        ({"confirm": "something else entirely"}, "differ"),
        ({"email": ""}, "This field is required"),
    ],
)
def test_bad_sign_ups_are_refused_on_the_page(app, client, open_signup, fields, says):
    page = client.get("/auth/signup", headers=headers())
    data = {"csrf_token": csrf_token(page), "name": "N", "email": "new@example.com", "password": NEW_PASSWORD}
    data |= {"confirm": data["password"]} | fields
    refused = client.post("/auth/signup", data=data, headers=headers())
    assert refused.status_code == 400 and says in refused.get_data(as_text=True)
    assert outbox_items(app) == []


def test_a_sign_up_without_the_forms_token_is_refused(app, client, open_signup):
    data = {"email": "new@example.com", "password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
    refused = client.post("/auth/signup", data=data, headers=headers())
    assert refused.status_code == 400 and "expired" in refused.get_data(as_text=True)
    assert outbox_items(app) == []


def test_sign_ups_are_rate_limited_per_address_and_per_client(make_app, smtp):
    app = emptied(
        make_app(
            **mail_config(smtp),
            AUTHSVC_ACCOUNT_MAIL_RATE_LIMIT="2/minute",
            AUTHSVC_ACCOUNT_MAIL_CLIENT_RATE_LIMIT="5/minute",
        )
    )
    world = World(app)
    world.update(Domain, world.domain().id, signup="open")
    app.test_client_class = HttpsClient
    client = app.test_client()
    assert [sign_up(client, "same@example.com").status_code for _ in range(3)] == [200, 200, 429]
    assert [sign_up(client, f"other{n}@example.com").status_code for n in range(3)] == [200, 200, 429]


def test_the_command_line_and_the_admin_api_set_sign_up(client, setup, runner, world):
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes="public admin", permission="admin")
    result = runner.invoke(
        args=["domains", "update", "--domain", HOST, "--signup", "restricted", "--signup-email-domain", "Example.ORG"]
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["signup"] == "restricted" and shown["signup_email_domains"] == ["example.org"]
    refused = runner.invoke(args=["domains", "update", "--domain", HOST, "--signup-email-domain", "not a domain"])
    assert refused.exit_code != 0 and "--signup-email-domain" in refused.output

    path = f"/domains/{setup.domain.id}"
    changed = api(client, "patch", path, key, {"signup": "open", "signup_email_domains": []})
    assert changed.status_code == 200 and changed.get_json()["signup"] == "open"
    needs_domains = api(client, "patch", path, key, {"signup": "restricted"})
    assert needs_domains.status_code == 422 and "signup_email_domains" in needs_domains.get_json()["fields"]
    assert api(client, "patch", path, key, {"signup": "sometimes"}).status_code == 422
    updates = audit(world, "domain.updated")  # in the order written
    assert [r.details["after"]["signup"] for r in updates] == ["restricted", "open"]


def test_the_console_sets_sign_up(app, client, setup, world):
    from tests.helpers import signin

    world.user(setup.domain, "admin@example.com", admin=True)
    signin(client, "admin@example.com", PASSWORD)
    path = f"/auth/admin/domains/{setup.domain.id}/signup"
    form = client.get(path, headers=headers())
    data = {"csrf_token": csrf_token(form), "signup": "restricted", "signup_email_domains": "example.org, example.net"}
    assert client.post(path, data=data, headers=headers()).status_code == 303
    [domain] = world.query(select(Domain))
    assert domain.signup == "restricted" and domain.signup_email_domains == "example.org example.net"
    empty = {"csrf_token": csrf_token(form), "signup": "restricted", "signup_email_domains": ""}
    refused = client.post(path, data=empty, headers=headers())
    assert refused.status_code == 422 and "at least one e-mail domain" in refused.get_data(as_text=True)
