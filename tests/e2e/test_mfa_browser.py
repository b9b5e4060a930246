"""Passkeys in a real browser: Chromium with the DevTools protocol's virtual authenticator
(WebAuthn.addVirtualAuthenticator through Playwright's CDP session) registers a passkey on the
settings page, then signs in with it as the second factor, and with it alone from the sign-in page.
The service runs under gunicorn.

WebAuthn needs a secure context and a relying party id that is a host name, not an IP
address: the domain is ``localhost``, which browsers treat as secure over plain http.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.helpers import in_one_pass
from tests.helpers.browser import chromium
from tests.helpers.servers import running_service

PASSWORD = "person password"
# A browser drives the pages; the API tests check the storage on both backends.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    with running_service(tmp_path_factory.mktemp("instance")) as service:
        service.cli("domains", "create", "--name", "Workplace", "--host", "localhost")
        service.cli("users", "create", "--domain", "localhost", "--email", "person@example.com", "--password", PASSWORD)
        yield service


def _virtual_authenticator(context, page) -> tuple[object, str]:
    cdp = context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    options = {
        "protocol": "ctap2",
        "transport": "internal",
        "hasResidentKey": True,
        "hasUserVerification": True,
        "isUserVerified": True,
        "automaticPresenceSimulation": True,
    }
    return cdp, cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})["authenticatorId"]


def _presence(cdp, authenticator: str, present: bool) -> None:
    """Whether the virtual authenticator answers at once, as a person who picks the passkey or touches the key."""
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": authenticator, "enabled": present})


def _sign_in_with_password(page, base: str) -> None:
    page.goto(f"{base}/auth/login?continue=/auth/mfa")
    page.fill("input[name=email]", "person@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


def test_a_passkey_registered_in_chromium_is_the_second_factor_at_sign_in(service, tmp_path):
    base = service.url.replace("127.0.0.1", "localhost")
    with chromium() as browser:
        context = browser.new_context()
        page = context.new_page()
        cdp, authenticator = _virtual_authenticator(context, page)

        _sign_in_with_password(page, base)
        page.wait_for_url("**/auth/mfa")
        assert "You sign in with your password only." in page.content()
        page.click("text=Add an authenticator app")
        page.wait_for_selector(".qr svg")
        page.screenshot(path=str(tmp_path / "mfa-totp.png"), full_page=True)
        page.goto(f"{base}/auth/mfa")
        page.click("text=Add a passkey or security key")
        page.wait_for_url("**/auth/mfa/passkey")
        page.fill("input[name=name]", "Virtual key")
        page.screenshot(path=str(tmp_path / "mfa-passkey.png"))
        page.click("#webauthn-start")
        page.wait_for_selector("text=Your recovery codes")
        assert page.locator("ul.codes li").count() == 10
        page.screenshot(path=str(tmp_path / "mfa-recovery-codes.png"), full_page=True)
        credentials = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
        assert len(credentials) == 1
        assert credentials[0]["rpId"] == "localhost"

        # The sign-in page would offer the passkey in its autofill (conditional UI), which the simulated
        # presence accepts at once: this person types the password instead.
        _presence(cdp, authenticator, False)
        page.goto(f"{base}/auth/logout")
        assert context.cookies(base) == [] or all(c["name"] != "user" for c in context.cookies(base))
        _sign_in_with_password(page, base)
        page.wait_for_selector("#webauthn-start")
        assert all(c["name"] != "user" for c in context.cookies(base)), "no session before the second factor"
        page.screenshot(path=str(tmp_path / "mfa-code.png"))
        _presence(cdp, authenticator, True)
        page.click("#webauthn-start")
        page.wait_for_url("**/auth/mfa")
        assert "Virtual key" in page.content()
        assert any(c["name"] == "user" for c in context.cookies(base))
        after = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
        assert after[0]["signCount"] > credentials[0]["signCount"], "the authenticator signed a second time"
        assert (tmp_path / "mfa-code.png").read_bytes().startswith(b"\x89PNG")


def test_a_passkey_of_another_authenticator_is_refused(service, tmp_path):
    """The first browser's passkey exists; a second browser with its own authenticator has none of it."""
    base = service.url.replace("127.0.0.1", "localhost")
    with chromium() as browser:
        context = browser.new_context()
        page = context.new_page()
        _virtual_authenticator(context, page)
        _sign_in_with_password(page, base)
        page.wait_for_selector("#webauthn-start")
        page.click("#webauthn-start")
        # The virtual authenticator holds no credential for this account: the browser's call fails and
        # nothing is posted; the person stays on the second-step page without a session.
        page.wait_for_timeout(1500)
        assert "/auth/login" in page.url
        assert all(c["name"] != "user" for c in context.cookies(base))


# A browser without conditional UI: the page must offer its button instead.
NO_CONDITIONAL_UI = """Object.defineProperty(PublicKeyCredential, "isConditionalMediationAvailable",
    {value: () => Promise.resolve(false), configurable: true});"""


def test_a_passkey_alone_signs_in_from_the_sign_in_page(service, tmp_path):
    """The sign-in page offers passkeys in the e-mail field's autofill (conditional UI), and by its button
    where the browser has no conditional UI; the virtual authenticator's passkey, discoverable under the
    account's random handle, signs in alone (no password, no second step)."""
    base = service.url.replace("127.0.0.1", "localhost")
    service.cli("users", "create", "--domain", "localhost", "--email", "alone@example.com", "--password", PASSWORD)
    with chromium() as browser:
        context = browser.new_context()
        page = context.new_page()
        cdp, authenticator = _virtual_authenticator(context, page)
        page.goto(f"{base}/auth/login?continue=/auth/mfa/passkey")
        page.fill("input[name=email]", "alone@example.com")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/auth/mfa/passkey")
        page.fill("input[name=name]", "Phone")
        page.click("#webauthn-start")
        page.wait_for_selector("text=Your recovery codes")
        [credential] = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
        assert credential["isResidentCredential"], "a discoverable credential: it can name its account"
        assert b"alone" not in credential["userHandle"].encode()

        # Conditional UI: the page asks as it loads; the person picks the passkey in the autofill
        # (the authenticator's presence, simulated), and the sign-in goes on to ``continue``.
        _presence(cdp, authenticator, False)
        page.goto(f"{base}/auth/logout")
        assert page.get_attribute("input[name=email]", "autocomplete") == "username webauthn"
        assert page.evaluate("PublicKeyCredential.isConditionalMediationAvailable()") is True
        assert all(c["name"] != "user" for c in context.cookies(base))
        _presence(cdp, authenticator, True)
        page.goto(f"{base}/auth/login?continue=/auth/mfa")
        page.wait_for_url(lambda url: urlsplit(url).path == "/auth/mfa")
        page.wait_for_selector("text=Phone")
        assert any(c["name"] == "user" for c in context.cookies(base))

        # Without conditional UI: the button.
        _presence(cdp, authenticator, False)
        page.add_init_script(NO_CONDITIONAL_UI)
        page.goto(f"{base}/auth/logout")
        page.wait_for_selector("#passkey-start", state="visible")
        assert all(c["name"] != "user" for c in context.cookies(base))
        page.screenshot(path=str(tmp_path / "signin.png"))
        _presence(cdp, authenticator, True)
        page.click("#passkey-start")
        page.wait_for_selector("text=Signed in")
        assert any(c["name"] == "user" for c in context.cookies(base))
        [after] = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
        assert after["signCount"] >= credential["signCount"] + 2, "it signed twice"
