"""The account page (/auth/account): a signed-in person sees and changes their own account.

Name, address (confirmed at the new address before it counts), password (the current one and a
recent sign-in; the other sessions end and the tokens are revoked, this browser stays signed in),
the sessions with "end this session" and "end all others", the connected applications, and the
account's recent security events. Every form needs the page's CSRF token; every change is audited.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord, Token, User
from tests.helpers import HOST, PASSWORD, REDIRECT_URI, HttpsClient, get_code, headers, signin
from tests.helpers.pages import INSPECT, csrf_token, post_consent
from tests.helpers.smtp import deliver, link_in, text_of

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
CHROME_WINDOWS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
NEW_PASSWORD = "a much longer passphrase"
CHANGE = {"current": PASSWORD, "password": NEW_PASSWORD, "confirm": NEW_PASSWORD}


@pytest.fixture
def app(mail_app):
    return mail_app


def browser(app, agent: str) -> HttpsClient:
    app.test_client_class = HttpsClient
    client = app.test_client()
    client.environ_base["HTTP_USER_AGENT"] = agent
    return client


def account(client):
    return client.get("/auth/account", headers=headers())


def post(client, path: str, data: dict | None = None, token: str | None = None):
    page = account(client)
    form = {"csrf_token": token if token is not None else csrf_token(page), **(data or {})}
    return client.post(path, data=form, headers=headers())


def end_buttons(page) -> list[str]:
    return re.findall(r'action="(/auth/account/sessions/[0-9a-f]+/end)"', page.get_data(as_text=True))


def row_action(page, text: str) -> str:
    """The "end this session" action of the session row that says ``text``."""
    rows = page.get_data(as_text=True).split("<li>")
    [row] = [row for row in rows if text in row and "/end" in row]
    return re.search(r'action="(/auth/account/sessions/[0-9a-f]+/end)"', row).group(1)


def signed_in(client) -> bool:
    return account(client).status_code == 200


def events(world, name: str) -> list[AuditRecord]:
    return world.query(select(AuditRecord).where(AuditRecord.event == name))


def test_the_page_needs_a_session_and_comes_back_after_sign_in(client, setup):
    response = account(client)
    assert response.status_code == 303
    location = urlsplit(response.headers["Location"])
    assert location.path == "/auth/login" and parse_qs(location.query) == {"continue": ["/auth/account"]}


def test_every_session_is_listed_with_its_device_address_method_and_times(app, setup):
    laptop, desktop = browser(app, FIREFOX), browser(app, CHROME_WINDOWS)
    signin(laptop)
    signin(desktop)
    page = account(laptop)
    body = page.get_data(as_text=True)
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert "Firefox on Linux" in body and "Chrome on Windows" in body
    assert body.count("127.0.0.1 · password · signed in") == 2 and "last seen" in body
    assert "this session" in body and len(end_buttons(page)) == 2


def test_ending_another_session_signs_that_browser_out_and_is_audited(app, setup, world):
    laptop, desktop = browser(app, FIREFOX), browser(app, CHROME_WINDOWS)
    signin(laptop)
    signin(desktop)
    page = account(laptop)
    action = row_action(page, "Chrome on Windows")
    ended = laptop.post(action, data={"csrf_token": csrf_token(page)}, headers=headers())
    assert ended.status_code == 303 and "done=session" in ended.headers["Location"]
    assert not signed_in(desktop), "the ended session no longer lets its browser in"
    assert signed_in(laptop)
    [record] = events(world, "session.ended")
    assert record.actor == record.target == f"user:{setup.person.id}"
    again = laptop.post(action, data={"csrf_token": csrf_token(account(laptop))}, headers=headers())
    assert again.status_code == 400 and "already ended" in again.get_data(as_text=True)


def test_end_all_others_keeps_only_this_session(app, setup, world):
    first, second, third = (browser(app, agent) for agent in (FIREFOX, CHROME_WINDOWS, CHROME_WINDOWS))
    for client in (first, second, third):
        signin(client)
    done = post(first, "/auth/account/sessions/end-others")
    assert done.status_code == 303
    assert signed_in(first) and not signed_in(second) and not signed_in(third)
    assert len(end_buttons(account(first))) == 1
    assert len(events(world, "session.others_ended")) == 1


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/auth/account/name", {"name": "Someone Else"}),
        ("/auth/account/email", {"email": "new@example.com"}),
        ("/auth/account/password", {"current": PASSWORD, "password": NEW_PASSWORD, "confirm": NEW_PASSWORD}),
        ("/auth/account/sessions/end-others", {}),
    ],
)
def test_a_form_without_the_pages_csrf_token_changes_nothing(app, client, setup, world, path, data):
    signin(client)
    refused = post(client, path, data, token="forged")
    assert refused.status_code == 400 and "form expired" in refused.get_data(as_text=True)
    [person] = world.query(select(User).where(User.id == setup.person.id))
    assert (person.name, person.email) == ("Person", "person@example.com")
    assert signed_in(client)


def test_the_name_changes_and_the_change_is_audited(client, setup, world):
    signin(client)
    assert post(client, "/auth/account/name", {"name": "  Ada   Lovelace "}).status_code == 303
    [person] = world.query(select(User).where(User.id == setup.person.id))
    assert person.name == "Ada Lovelace"
    [record] = events(world, "user.name_changed")
    assert record.details == {"before": "Person", "after": "Ada Lovelace"}
    blank = post(client, "/auth/account/name", {"name": "   "})
    assert blank.status_code == 400


def test_a_new_password_needs_the_current_one(app, client, setup, world):
    signin(client)
    wrong = post(
        client, "/auth/account/password", {"current": "wrong", "password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
    )
    assert wrong.status_code == 400 and "current password is incorrect" in wrong.get_data(as_text=True)
    short = post(client, "/auth/account/password", {"current": PASSWORD, "password": "short", "confirm": "short"})
    assert short.status_code == 400 and "at least 8 characters" in short.get_data(as_text=True)
    with app.app_context():
        from authsvc.core.database import db

        assert db.session.get(User, setup.person.id).check_password(PASSWORD)
    assert events(world, "user.password_changed") == []


def test_a_new_password_needs_a_recent_sign_in(client, setup, clock):
    signin(client)
    clock.advance(301)
    stale = post(
        client, "/auth/account/password", {"current": PASSWORD, "password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
    )
    assert stale.status_code == 303
    assert (
        "/auth/login?prompt=login" in stale.headers["Location"]
        and "continue=%2Fauth%2Faccount" in stale.headers["Location"]
    )


def test_a_new_password_ends_the_other_sessions_and_tokens_and_keeps_this_one(app, setup, world, smtp):
    here, elsewhere = browser(app, FIREFOX), browser(app, CHROME_WINDOWS)
    signin(here)
    signin(elsewhere)
    code = get_code(elsewhere, setup.confidential_app.client_id)
    tokens = elsewhere.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        auth=(setup.confidential_app.client_id, setup.client_secret),
        headers=headers(),
    ).get_json()
    data = {"current": PASSWORD, "password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
    changed = post(here, "/auth/account/password", data)
    assert changed.status_code == 303 and "done=password" in changed.headers["Location"]
    assert signed_in(here), "this browser stays signed in"
    assert not signed_in(elsewhere)
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert here.get(INSPECT, headers=headers(**bearer)).status_code == 401, "the tokens are revoked"
    assert world.query(select(Token).where(Token.revoked_at.is_(None))) == []
    [record] = events(world, "user.password_changed")
    assert record.target == f"user:{setup.person.id}"
    deliver(app)
    [notice] = [m for m in smtp.to("person@example.com") if m["Subject"] == "Your password was changed"]
    assert "every other session" in text_of(notice)
    signin(browser(app, FIREFOX), password=NEW_PASSWORD)


def test_a_new_address_counts_once_confirmed_there_and_the_old_one_is_told(app, client, setup, smtp, world):
    signin(client)
    asked = post(client, "/auth/account/email", {"email": "New.Address@Example.com"})
    assert asked.status_code == 303
    assert "Waiting for confirmation at new.address@example.com" in account(client).get_data(as_text=True)
    deliver(app)
    [message] = smtp.to("new.address@example.com")
    [person] = world.query(select(User).where(User.id == setup.person.id))
    assert person.email == "person@example.com", "nothing changes before the new address is confirmed"
    link = link_in(message)
    opened = client.get(link.split(HOST, 1)[1], headers=headers())
    assert opened.status_code == 303 and "token" not in opened.headers["Location"]
    page = client.get(opened.headers["Location"], headers=headers())
    assert page.status_code == 200 and "new.address@example.com" in page.get_data(as_text=True)
    done = client.post(opened.headers["Location"], data={"csrf_token": csrf_token(page)}, headers=headers())
    assert done.status_code == 200 and "is now your account" in done.get_data(as_text=True)
    [person] = world.query(select(User).where(User.id == setup.person.id))
    assert (person.email, person.email_verified) == ("new.address@example.com", True)
    deliver(app)
    [notice] = smtp.to("person@example.com")
    assert notice["Subject"] == "Your e-mail address was changed" and "new.address@example.com" in text_of(notice)
    assert [r.details for r in events(world, "user.email_changed")] == [
        {"before": "person@example.com", "after": "new.address@example.com"}
    ]
    again = client.post(opened.headers["Location"], data={"csrf_token": csrf_token(page)}, headers=headers())
    assert again.status_code == 400, "the link works once"


def test_an_address_taken_meanwhile_is_refused_when_the_link_is_followed(app, client, setup, smtp, world):
    signin(client)
    assert post(client, "/auth/account/email", {"email": "taken@example.com"}).status_code == 303
    world.user(setup.domain, "taken@example.com")
    deliver(app)
    [message] = smtp.to("taken@example.com")
    opened = client.get(link_in(message).split(HOST, 1)[1], headers=headers())
    page = client.get(opened.headers["Location"], headers=headers())
    refused = client.post(opened.headers["Location"], data={"csrf_token": csrf_token(page)}, headers=headers())
    assert refused.status_code == 400 and "already another account" in refused.get_data(as_text=True)
    [person] = world.query(select(User).where(User.id == setup.person.id))
    assert person.email == "person@example.com"


def test_asking_for_an_address_in_use_answers_as_for_any_other(app, client, setup, smtp, world):
    """No enumeration: whether an address is another account's is told only to whoever follows the link."""
    world.user(setup.domain, "taken@example.com")
    signin(client)
    assert post(client, "/auth/account/email", {"email": "taken@example.com"}).status_code == 303
    assert post(client, "/auth/account/email", {"email": "free@example.com"}).status_code == 303


def test_connected_applications_are_listed_and_can_be_disconnected(app, client, setup, world):
    consenting, _ = world.application(setup.domain, name="Asks first", consent=True)
    signin(client)
    assert post_consent(client, consenting, "approve").status_code == 302
    get_code(client, setup.public_app.client_id)
    page = account(client)
    body = page.get_data(as_text=True)
    assert "Asks first" in body
    action = f"/auth/account/applications/{consenting.client_id}/disconnect"
    assert action in body
    done = client.post(action, data={"csrf_token": csrf_token(page)}, headers=headers())
    assert done.status_code == 303
    assert "Asks first" not in account(client).get_data(as_text=True)
    assert len(events(world, "consent.withdrawn")) == 1
    unknown = client.post(
        "/auth/account/applications/nope/disconnect", data={"csrf_token": csrf_token(page)}, headers=headers()
    )
    assert unknown.status_code == 400


def test_recent_security_events_are_the_accounts_own(app, client, setup, world):
    other = world.user(setup.domain, "other@example.com")
    signin(client, "other@example.com")
    client.delete_cookie("user", domain=HOST)
    signin(client)
    post(client, "/auth/account/name", {"name": "Renamed"})
    body = account(client).get_data(as_text=True)
    events_table = body[body.index("Recent security events") :]
    assert "Name changed" in events_table and "Signed in" in events_table
    assert events_table.count("Signed in") == 1, f"user {other.id}'s sign-in is not shown"


def test_the_second_factors_are_on_the_page_and_their_old_address_still_works(client, setup):
    signin(client)
    body = account(client).get_data(as_text=True)
    assert "Second factors" in body and 'href="/auth/mfa"' in body
    assert client.get("/auth/mfa", headers=headers()).status_code == 200
