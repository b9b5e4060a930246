"""A forgotten password in a real browser, against the service under gunicorn with a real SMTP server.

Chromium asks for a link from the sign-in page; the gunicorn worker's outbox sender mails it to aiosmtpd on
loopback; the browser opens the link read from the received message, sets a new password and signs in with
it. Production settings (DATABASE_URL set): only the SMTP server makes e-mail possible.
"""

from __future__ import annotations

import pytest

from tests.helpers.browser import chromium
from tests.helpers.servers import running_service
from tests.helpers.smtp import link_in

PASSWORD = "person password"
NEW_PASSWORD = "a brand new password"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory, smtp_server):
    smtp = {"AUTHSVC_SMTP_URL": smtp_server.url, "AUTHSVC_MAIL_FROM": "accounts@example.com"}
    with running_service(tmp_path_factory.mktemp("instance"), **smtp, AUTHSVC_OUTBOX_POLL="1") as service:
        service.cli("domains", "create", "--name", "Workplace", "--host", "localhost")
        service.cli("users", "create", "--domain", "localhost", "--email", "person@example.com", "--password", PASSWORD)
        yield service


def test_a_person_resets_a_forgotten_password_in_chromium(service, smtp_server):
    base = service.url.replace("127.0.0.1", "localhost")
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.goto(f"{base}/auth/login")
        page.click("text=Forgot your password?")
        page.fill("input[name=email]", "person@example.com")
        page.click("button[type=submit]")
        assert "Check your inbox" in page.content()

        [message] = smtp_server.wait_for("person@example.com", timeout=15)
        link = link_in(message)
        assert link.startswith(f"{base}/auth/password/reset?token=")
        opened = page.goto(link)
        assert page.url == f"{base}/auth/password/reset", "the secret left the address bar"
        assert opened is not None and opened.headers["referrer-policy"] == "no-referrer"
        page.fill("input[name=password]", NEW_PASSWORD)
        page.fill("input[name=confirm]", NEW_PASSWORD)
        page.click("button[type=submit]")
        assert "Password changed" in page.content()

        page.click('a.button:text-is("Sign in")')
        page.fill("input[name=email]", "person@example.com")
        page.fill("input[name=password]", NEW_PASSWORD)
        page.click("button[type=submit]")
        assert "You are signed in" in page.content()
    changed = smtp_server.wait_for("person@example.com", count=2, timeout=15)
    assert [m["Subject"] for m in changed] == ["Reset your password", "Your password was changed"]
