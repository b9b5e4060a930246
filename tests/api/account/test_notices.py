"""Notices: a short message to the account's address, at the real SMTP server, when its security changes.

A password changed (the account page) or reset (by e-mail), the address changed (to the old address),
a second factor added or removed, every second factor reset by an administrator, and a sign-in from a
browser not seen before for the user (where the domain's ``new_device_notice`` is on, the default; the
user's very first browser is only remembered).
"""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from authsvc.account.devices import COOKIE, KNOWN_PER_USER, KnownDevice
from authsvc.core.models import Domain, MfaFactor, User
from tests.helpers import HOST, PASSWORD, HttpsClient, headers, signin
from tests.helpers.mfa import enrol
from tests.helpers.pages import csrf_token
from tests.helpers.smtp import deliver, link_in, text_of
from tests.helpers.sso import api

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
EDGE = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
    "Safari/537.36 Edg/131.0.0.0"
)
NEW_DEVICE = "A sign-in from a new device"


@pytest.fixture
def app(mail_app):
    return mail_app


def browser(app, agent: str = FIREFOX) -> HttpsClient:
    app.test_client_class = HttpsClient
    client = app.test_client()
    client.environ_base["HTTP_USER_AGENT"] = agent
    return client


def subjects(app, smtp, address: str = "person@example.com") -> list[str]:
    deliver(app)
    return [m["Subject"] for m in smtp.to(address)]


def test_the_first_browser_is_remembered_and_a_new_one_is_told(app, setup, smtp, world):
    laptop = browser(app)
    signin(laptop)
    assert laptop.get_cookie(COOKIE, domain=HOST) is not None
    cookie = laptop.get_cookie(COOKIE, domain=HOST)
    assert cookie.http_only and cookie.max_age is not None
    laptop.delete_cookie("user", domain=HOST)
    signin(laptop)
    assert subjects(app, smtp) == [], "a known browser, and the first one, are not news"
    other = browser(app, EDGE)
    signin(other)
    deliver(app)
    [notice] = smtp.to("person@example.com")
    assert notice["Subject"] == NEW_DEVICE
    assert "Edge on Windows" in text_of(notice) and "127.0.0.1" in text_of(notice)
    assert "/auth/account" in text_of(notice)
    stored = world.query(select(KnownDevice))
    assert len(stored) == 2
    assert all(laptop.get_cookie(COOKIE, domain=HOST).value not in d.digest for d in stored), "digests only"


def test_one_browser_is_new_to_each_user(app, setup, smtp, world):
    world.user(setup.domain, "colleague@example.com")
    shared = browser(app)
    signin(shared)
    signin(shared, "colleague@example.com")
    signin(browser(app, EDGE), "colleague@example.com")
    assert subjects(app, smtp, "colleague@example.com") == [NEW_DEVICE]
    assert subjects(app, smtp) == []


def test_each_user_keeps_a_bounded_list_of_browsers(app, setup, smtp, world):
    for _ in range(KNOWN_PER_USER + 3):
        signin(browser(app))
    assert len(world.query(select(KnownDevice))) == KNOWN_PER_USER


def test_a_domain_may_turn_the_new_device_notice_off(app, client, setup, smtp, world):
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes="public admin", permission="admin")
    changed = api(client, "patch", f"/domains/{setup.domain.id}", key, {"new_device_notice": False})
    assert changed.status_code == 200 and changed.get_json()["new_device_notice"] is False
    signin(browser(app))
    signin(browser(app, EDGE))
    assert subjects(app, smtp) == []
    assert api(client, "get", f"/domains/{setup.domain.id}", key).get_json()["new_device_notice"] is False


def test_the_cli_turns_the_new_device_notice_off_and_on(app, runner, setup, world):
    result = runner.invoke(args=["domains", "update", "--domain", HOST, "--new-device-notice", "off"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["new_device_notice"] is False
    [domain] = world.query(select(Domain))
    assert domain.new_device_notice is False
    result = runner.invoke(args=["domains", "update", "--domain", HOST, "--new-device-notice", "on"])
    assert json.loads(result.stdout)["new_device_notice"] is True
    bad = runner.invoke(args=["domains", "update", "--domain", HOST, "--new-device-notice", "maybe"])
    assert bad.exit_code != 0


def test_adding_and_removing_a_factor_each_send_a_notice(app, client, setup, smtp, world):
    enrol(client)
    assert subjects(app, smtp) == ["A second factor was added"]
    assert "An authenticator app was added" in text_of(smtp.to("person@example.com")[0])
    [factor] = world.query(select(MfaFactor))
    page = client.get("/auth/mfa", headers=headers())
    removed = client.post(f"/auth/mfa/{factor.id}/remove", data={"csrf_token": csrf_token(page)}, headers=headers())
    assert removed.status_code == 303
    assert subjects(app, smtp) == ["A second factor was added", "A second factor was removed"]


@pytest.mark.parametrize(
    "locale,subject,sentence",
    [
        (None, "Your second factors were reset", "An administrator of"),
        ("de", "Ihre zweiten Faktoren wurden zurückgesetzt", "Ein Administrator von"),
    ],
)
def test_an_admins_reset_of_the_factors_tells_the_user_in_their_language(
    app, client, setup, smtp, world, locale, subject, sentence
):
    """A reset the user did not make themselves (a stolen phone reported, or an attacker at the helpdesk):
    the user hears of it, in their own language, not in the admin's."""
    enrol(client)
    world.update(User, setup.person.id, locale=locale)
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes="public admin", permission="admin")
    reset = client.post(
        f"/api/engine/v2/users/{setup.person.id}/mfa/reset",
        headers=headers(**{"X-API-Key": key, "Accept-Language": "fr"}),
    )
    assert reset.status_code == 200 and reset.get_json()["factors_removed"] == 1
    assert subjects(app, smtp)[1:] == [subject]
    notice = smtp.to("person@example.com")[1]
    assert sentence in text_of(notice) and "/auth/password/forgot" in text_of(notice)
    assert subjects(app, smtp, "admin@example.com") == []


def test_a_password_reset_sends_its_notice(app, client, setup, smtp):
    page = client.get("/auth/password/forgot", headers=headers())
    client.post(
        "/auth/password/forgot",
        data={"csrf_token": csrf_token(page), "email": "person@example.com"},
        headers=headers(),
    )
    deliver(app)
    link = link_in(smtp.to("person@example.com")[0])
    opened = client.get(link.split(HOST, 1)[1], headers=headers())
    form = client.get(opened.headers["Location"], headers=headers())
    data = {"csrf_token": csrf_token(form), "password": "a new passphrase", "confirm": "a new passphrase"}
    assert client.post("/auth/password/reset", data=data, headers=headers()).status_code == 200
    deliver(app)
    [notice] = [m for m in smtp.to("person@example.com") if m["Subject"] == "Your password was changed"]
    assert "every session of the account ended" in text_of(notice)


def test_a_password_change_on_the_account_page_sends_its_notice(app, client, setup, smtp):
    signin(client)
    page = client.get("/auth/account", headers=headers())
    data = {"csrf_token": csrf_token(page), "current": PASSWORD, "password": "a new passphrase"}
    changed = client.post("/auth/account/password", data={**data, "confirm": data["password"]}, headers=headers())
    assert changed.status_code == 303
    assert subjects(app, smtp) == ["Your password was changed"]
    assert "every other session" in text_of(smtp.to("person@example.com")[0])


def test_an_address_change_tells_the_old_address(app, client, setup, smtp):
    signin(client)
    page = client.get("/auth/account", headers=headers())
    data = {"csrf_token": csrf_token(page), "email": "moved@example.com"}
    assert client.post("/auth/account/email", data=data, headers=headers()).status_code == 303
    deliver(app)
    assert subjects(app, smtp) == [], "nothing to tell the old address before the new one is confirmed"
    link = link_in(smtp.to("moved@example.com")[0])
    opened = client.get(link.split(HOST, 1)[1], headers=headers())
    confirm = client.get(opened.headers["Location"], headers=headers())
    done = client.post(opened.headers["Location"], data={"csrf_token": csrf_token(confirm)}, headers=headers())
    assert done.status_code == 200
    assert subjects(app, smtp) == ["Your e-mail address was changed"]
    text = text_of(smtp.to("person@example.com")[0])
    assert re.search(r"from person@example\.com to moved@example\.com", text)
