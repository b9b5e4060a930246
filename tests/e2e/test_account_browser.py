"""A forgotten password, an invitation and a sign-up in a real browser, against the service under gunicorn with
a real SMTP server.

Chromium asks for a link from the sign-in page (or an admin invites over the admin API); the gunicorn worker's
outbox sender mails it to aiosmtpd on loopback; the browser opens the link read from the received message, sets a
password (or confirms the address) and signs in. Production settings (DATABASE_URL set): only the SMTP server
makes e-mail possible.
"""

from __future__ import annotations

import pytest
import requests
from playwright.sync_api import expect

from tests.helpers import in_one_pass
from tests.helpers.browser import chromium
from tests.helpers.servers import running_service
from tests.helpers.smtp import link_in

PASSWORD = "person password"
NEW_PASSWORD = "a brand new password"
# A browser drives the pages; the API tests check the storage on both backends.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory, smtp_server):
    smtp = {"AUTHSVC_SMTP_URL": smtp_server.url, "AUTHSVC_MAIL_FROM": "accounts@example.com"}
    with running_service(tmp_path_factory.mktemp("instance"), **smtp, AUTHSVC_OUTBOX_POLL="1") as service:
        service.cli("domains", "create", "--name", "Workplace", "--host", "localhost")
        service.cli("users", "create", "--domain", "localhost", "--email", "person@example.com", "--password", PASSWORD)
        service.cli("domains", "update", "--domain", "localhost", "--signup", "open")
        yield service


def test_a_person_resets_a_forgotten_password_in_chromium(service, smtp_server):
    base = service.url.replace("127.0.0.1", "localhost")
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.goto(f"{base}/auth/login")
        page.click("text=Forgot your password?")
        page.fill("input[name=email]", "person@example.com")
        page.click("button[type=submit]")
        expect(page.locator("body")).to_contain_text("Check your inbox")

        [message] = smtp_server.wait_for("person@example.com", timeout=15)
        link = link_in(message)
        assert link.startswith(f"{base}/auth/password/reset?token=")
        opened = page.goto(link)
        assert page.url == f"{base}/auth/password/reset", "the secret left the address bar"
        assert opened is not None and opened.headers["referrer-policy"] == "no-referrer"
        page.fill("input[name=password]", NEW_PASSWORD)
        page.fill("input[name=confirm]", NEW_PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("body")).to_contain_text("Password changed")

        page.click('a.button:text-is("Sign in")')
        page.fill("input[name=email]", "person@example.com")
        page.fill("input[name=password]", NEW_PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("body")).to_contain_text("You are signed in")
    changed = smtp_server.wait_for("person@example.com", count=2, timeout=15)
    assert [m["Subject"] for m in changed] == ["Reset your password", "Your password was changed"]


def test_an_invited_person_joins_in_chromium_and_is_signed_in(service, smtp_server):
    base = service.url.replace("127.0.0.1", "localhost")
    service.cli(
        "users", "create", "--domain", "localhost", "--email", "admin@example.com", "--password", PASSWORD, "--admin"
    )
    key = service.cli(
        "api-keys",
        "create",
        "--domain",
        "localhost",
        "--user",
        "admin@example.com",
        "--name",
        "invites",
        "--scopes",
        "public admin",
        "--permission",
        "admin",
    )["key"]
    [domain] = [d for d in service.cli("domains", "list")["domains"] if d["host"] == "localhost"]
    invited = requests.post(
        f"{base}/api/engine/v2/domains/{domain['id']}/invitations",
        json={"email": "invited@example.com", "name": "Invited Person"},
        headers={"X-API-Key": key},
        timeout=10,
    )
    assert invited.status_code == 201 and "link" not in invited.json()
    [message] = smtp_server.wait_for("invited@example.com", timeout=15)
    link = link_in(message)
    assert link.startswith(f"{base}/auth/invitation?token=")
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.goto(link)
        assert page.url == f"{base}/auth/invitation", "the secret left the address bar"
        expect(page.locator("body")).to_contain_text("invited@example.com")
        page.fill("input[name=password]", NEW_PASSWORD)
        page.fill("input[name=confirm]", NEW_PASSWORD)
        page.click("text=Set the password and join")
        expect(page.locator("body")).to_contain_text("You are signed in")
        expect(page.locator("body")).to_contain_text("invited@example.com")
        # The link made its account once: opened again, it says so.
        page.goto(link)
        expect(page.locator("body")).to_contain_text("This invitation does not work")
    listed = requests.get(
        f"{base}/api/engine/v2/domains/{domain['id']}/invitations", headers={"X-API-Key": key}, timeout=10
    ).json()["items"]
    assert [i["state"] for i in listed] == ["accepted"]


def test_a_person_signs_up_in_chromium_and_signs_in_once_the_address_is_confirmed(service, smtp_server):
    base = service.url.replace("127.0.0.1", "localhost")
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.goto(f"{base}/auth/login")
        page.click("text=Create an account")
        page.fill("input[name=name]", "Signed Up")
        page.fill("input[name=email]", "signed-up@example.com")
        page.fill("input[name=password]", NEW_PASSWORD)
        page.fill("input[name=confirm]", NEW_PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("body")).to_contain_text("Check your inbox")

        [message] = smtp_server.wait_for("signed-up@example.com", timeout=15)
        link = link_in(message)
        assert link.startswith(f"{base}/auth/email/verify?token=")
        # Not before the address is confirmed.
        page.goto(f"{base}/auth/login")
        page.fill("input[name=email]", "signed-up@example.com")
        page.fill("input[name=password]", NEW_PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("body")).to_contain_text("Confirm your e-mail address first")

        page.goto(link)
        page.click("button[type=submit]")
        expect(page.locator("body")).to_contain_text("Address confirmed")
        page.goto(f"{base}/auth/login")
        page.fill("input[name=email]", "signed-up@example.com")
        page.fill("input[name=password]", NEW_PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("body")).to_contain_text("You are signed in")


def _sign_in(page, base: str, password: str, then: str = "/auth/account") -> None:
    page.goto(f"{base}/auth/login?continue={then}")
    page.fill("input[name=email]", "worker@example.com")
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}{then}")


def test_a_person_ends_another_session_and_changes_the_password_on_the_account_page(service, smtp_server):
    """The account page in Chromium: two browsers signed in; one ends the other's session, then sets a new
    password (the current one asked), and stays signed in while the notice reaches the SMTP server."""
    service.cli("users", "create", "--domain", "localhost", "--email", "worker@example.com", "--password", PASSWORD)
    base = service.url.replace("127.0.0.1", "localhost")
    with chromium() as browser:
        elsewhere = browser.new_context(user_agent="Mozilla/5.0 (Windows NT 10.0) Chrome/131.0.0.0 Safari/537.36")
        other = elsewhere.new_page()
        _sign_in(other, base, PASSWORD)
        assert "Your account" in other.content()

        page = browser.new_context().new_page()
        _sign_in(page, base, PASSWORD)
        assert page.url == f"{base}/auth/account"
        row = page.locator("ul.sessions li", has_text="Chrome on Windows")
        with page.expect_navigation():
            row.locator("button").click()
        expect(page.locator("body")).to_contain_text("The session ended.")
        assert page.locator("ul.sessions li").count() == 1
        other.goto(f"{base}/auth/account")
        assert "/auth/login" in other.url, "the ended session's browser is asked to sign in"

        page.fill("input[name=current]", PASSWORD)
        page.fill("input[name=password]", NEW_PASSWORD)
        page.fill("input[name=confirm]", NEW_PASSWORD)
        with page.expect_navigation():
            page.click("button:text-is('Change password')")
        expect(page.locator("body")).to_contain_text("Your password was changed")
        page.goto(f"{base}/auth/account")
        assert page.url == f"{base}/auth/account", "this browser stays signed in"
    changed = smtp_server.wait_for("worker@example.com", count=2, timeout=15)
    assert "Your password was changed" in [m["Subject"] for m in changed]
