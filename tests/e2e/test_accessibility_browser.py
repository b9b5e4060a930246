"""Every page a person meets passes axe-core's WCAG 2 A/AA rules with no serious or critical violation, in the
default look and on a branded domain, in English and in Arabic (right to left); and works by keyboard alone.
The pages a message opens (an invitation, a reset link, an address to confirm) are reached through the links in
the mail the service sends to the suite's SMTP server.

axe-core is the npm package (a pinned peer, devtools/npm_peers.py), injected into each page in Chromium. The
pages' CSP forbids our injected script, so the axe context bypasses it (tests/helpers/axe.py); every page's
CSP header is checked all the same: a strict policy, without 'unsafe-inline'. docs/accessibility.md.

A tour a look (the default one, a branded domain) and a language: four tests, on one worker (one service, one
Chromium). They run on one pass of the test command: the pages' markup, their fields and their headers do not
depend on the database or the store (the API and page tests check what is stored, on both backends), so a
second pass would only repeat the same pages in the same browser.
"""

from __future__ import annotations

import re
import time

import pyotp
import pytest
from PIL import Image

from authsvc.auth.views import SIGNIN_CSP
from authsvc.web.pages import PAGE_HEADERS
from tests.helpers import in_one_pass
from tests.helpers.axe import axe_context, axe_source, describe, violations
from tests.helpers.browser import chromium
from tests.helpers.servers import running_service
from tests.helpers.smtp import text_of

# A browser drives the pages; the API tests check the storage on both backends.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]

PASSWORD = "person password"
DEFAULT_HOST, BRANDED_HOST = "localhost", "127.0.0.1"
LOCALES = ("en-GB", "ar")
# What password managers and passkeys read: each page's fields and their autocomplete tokens.
AUTOCOMPLETE = {
    "sign-in": {"email": "username webauthn", "password": "current-password"},
    "sign-up": {"name": "name", "email": "email", "password": "new-password", "confirm": "new-password"},
    "password forgotten": {"email": "email"},
    "account": {"name": "name", "email": "email", "current": "current-password", "password": "new-password"},
    "authenticator app set-up": {"code": "one-time-code"},
    "second step at sign-in": {"code": "one-time-code"},
    "new password from a reset link": {"password": "new-password", "confirm": "new-password"},
    "invitation": {"password": "new-password", "confirm": "new-password"},
}
# A refused form: each of its fields names the error (aria-describedby) and is marked invalid.
REFUSED = ("sign-in, refused", "sign-up, refused", "second step, refused")
# The fields of the page's own forms (not the language switcher's).
FIELDS = """els => els.filter(e => e.type !== 'hidden' && !e.closest('[hidden]') && !e.closest('form.language'))
    .map(e => ({
    name: e.name, autocomplete: e.getAttribute('autocomplete'), invalid: e.getAttribute('aria-invalid'),
    described: (e.getAttribute('aria-describedby') || '').split(' ').filter(Boolean)
        .map(id => document.getElementById(id)).filter(Boolean).map(d => d.textContent.trim())}))"""
VIRTUAL_AUTHENTICATOR = {
    "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
    "isUserVerified": True, "automaticPresenceSimulation": True,
}  # fmt: skip
# PKCE's S256 challenge of some verifier: the consent page comes before any code is issued.
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory, smtp_server):
    instance = tmp_path_factory.mktemp("instance")
    logo = instance / "logo.png"
    Image.new("RGB", (120, 40), (16, 24, 32)).save(logo)
    # With e-mail, the sign-up and forgotten password pages have their forms; the links in the mail the
    # workers send (every second) open the pages a person reaches from a message.
    smtp = {"AUTHSVC_SMTP_URL": smtp_server.url, "AUTHSVC_MAIL_FROM": "accounts@example.com"}
    smtp["AUTHSVC_OUTBOX_POLL"] = "1"
    with running_service(instance, **smtp) as service:
        for host, name in ((DEFAULT_HOST, "Workplace"), (BRANDED_HOST, "Branded")):
            service.cli("domains", "create", "--name", name, "--host", host)
            service.cli("domains", "update", "--domain", host, "--signup", "open")
            # A person for each run that sets up an authenticator app (a run per language).
            for email in ("person@example.com", *(f"mfa-{locale}@example.com" for locale in LOCALES)):
                service.cli("users", "create", "--domain", host, "--email", email, "--password", PASSWORD)
        service.cli(
            "domains", "brand", "--domain", BRANDED_HOST, "--display-name", "Acme Corp", "--logo", str(logo),
            "--primary-color", "#FFD400", "--background-color", "#101820", "--privacy-url", "https://acme.example/p",
        )  # fmt: skip
        service.apps, service.providers = {}, {}
        for host in (DEFAULT_HOST, BRANDED_HOST):
            for locale in LOCALES:
                service.cli("users", "invite", "--domain", host, "--email", f"invited-{locale}@example.com")
            # A provider to sign in with: the signed-in person may link their account to it.
            service.providers[host] = service.cli(
                "sso", "create", "--domain", host, "--name", "Example IdP", "--protocol", "oauth2",
                "--client-id", "c", "--client-secret", "s3cret", "--authorize-url", "https://idp.example/authorize",
                "--token-url", "https://idp.example/token", "--userinfo-url", "https://idp.example/userinfo",
            )["id"]  # fmt: skip
            service.apps[host] = service.cli(
                "apps", "create", "--domain", host, "--name", "Room Booker", "--consent",
                "--redirect-uri", "https://rooms.example.com/callback", "--scopes", "public mqtt.read",
            )["client_id"]  # fmt: skip
        yield service


@pytest.fixture(scope="module")
def browser():
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def axe():
    return axe_source()


def _base(service, host: str) -> str:
    return service.url.replace("127.0.0.1", host)


def _sign_in(page, base: str, email: str, password: str = PASSWORD) -> None:
    page.goto(f"{base}/auth/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


def _mailed_link(smtp_server, address: str, host: str, path: str, base: str) -> str:
    """The link to ``path`` on ``host`` that reached ``address``, opened at ``base`` (a link made on the command line
    points at https://host)."""
    pattern = re.compile(rf"https?://{re.escape(host)}(?::\d+)?{re.escape(path)}\?token=(\S+)")
    address = address.lower()  # as the service stores it, and writes it to
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for message in smtp_server.to(address):
            found = pattern.search(text_of(message))
            if found:
                return f"{base}{path}?token={found.group(1)}"
        smtp_server.wait_for(address, count=len(smtp_server.to(address)) + 1, timeout=0.5)
    raise AssertionError(f"no link to {host}{path} reached {address}")


def _tour(service, smtp_server, browser, axe, host: str, locale: str) -> dict[str, list]:
    """Open every page a person meets on ``host`` and run axe on each; {page: its serious/critical violations}."""
    base = _base(service, host)
    context = axe_context(browser, locale=locale)
    page = context.new_page()
    found: dict[str, list] = {}
    policies: dict[str, str | None] = {}
    fields: dict[str, list] = {}

    def check(name: str, answer=None) -> None:
        page.wait_for_load_state("load")
        if answer is not None:
            policies[name] = answer.headers.get("content-security-policy")
        found[name] = violations(page, axe)
        fields[name] = page.eval_on_selector_all("input, select, textarea", FIELDS)

    # The page speaks the browser's language: Arabic right to left, with its translated heading.
    page.goto(f"{base}/auth/login")
    lang, direction = page.evaluate("[document.documentElement.lang, document.documentElement.dir]")
    heading = page.locator("main h1").first.inner_text()
    if locale.startswith("ar"):
        assert lang.startswith("ar") and direction == "rtl" and heading == "تسجيل الدخول", (lang, direction, heading)
    else:
        assert lang.startswith("en") and direction == "ltr" and heading == "Sign in", (lang, direction, heading)
    check("sign-in", page.goto(f"{base}/auth/login"))
    _sign_in(page, base, "person@example.com", "a wrong password")
    check("sign-in, refused")
    check("password forgotten", page.goto(f"{base}/auth/password/forgot"))
    page.fill("input[name=email]", f"mfa-{locale}@example.com")
    page.click("form button[type=submit]")
    check("password forgotten, link sent")
    check("sign-up", page.goto(f"{base}/auth/signup"))
    page.fill("input[name=email]", "someone@example.com")
    page.fill("input[name=password]", "short")
    page.click("form button[type=submit]")
    check("sign-up, refused")
    page.fill("input[name=name]", "Joined Person")
    page.fill("input[name=email]", f"joined-{locale}@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.fill("input[name=confirm]", PASSWORD)
    page.click("form button[type=submit]")
    check("sign-up, address to confirm")
    check("error: a spent link", page.goto(f"{base}/auth/password/reset?token=nothing"))
    check("error: an unknown invitation", page.goto(f"{base}/auth/invitation?token=nothing"))
    check("device code", page.goto(f"{base}/auth/device"))

    _sign_in(page, base, "person@example.com")
    check("signed in")
    authorize = (
        f"{base}/auth/oauth/authorize?response_type=code&client_id={service.apps[host]}"
        "&redirect_uri=https://rooms.example.com/callback&scope=public%20mqtt.read&state=s"
        f"&code_challenge={CHALLENGE}&code_challenge_method=S256"
    )
    check("consent", page.goto(authorize))
    check("device code, signed in", page.goto(f"{base}/auth/device"))
    check("account", page.goto(f"{base}/auth/account"))
    page.fill("form[action$='/account/email'] input[name=email]", f"moved-{locale}@example.com")
    page.click("form[action$='/account/email'] button[type=submit]")
    check("account, new address to confirm")
    check("account sessions", page.goto(f"{base}/auth/account/sessions"))
    check("linking a provider", page.goto(f"{base}/auth/oauth2/link?id={service.providers[host]}"))
    check("sign-out", page.goto(f"{base}/auth/oauth/end_session"))
    page.goto(f"{base}/auth/logout")

    # The second factor: set up an authenticator app, then sign in with it.
    _sign_in(page, base, f"mfa-{locale}@example.com")
    check("second factors", page.goto(f"{base}/auth/mfa"))
    check("passkey set-up", page.goto(f"{base}/auth/mfa/passkey"))
    check("authenticator app set-up", page.goto(f"{base}/auth/mfa/totp"))
    secret = page.inner_text("code.secret").replace(" ", "")
    page.fill("input[name=code]", pyotp.TOTP(secret).now())
    page.click("button[type=submit]")
    check("recovery codes")
    if host == DEFAULT_HOST:
        # A passkey too (WebAuthn refuses an IP address as its relying party: not on the branded host), so that
        # the second step at sign-in offers it.
        cdp = context.new_cdp_session(page)
        cdp.send("WebAuthn.enable")
        authenticator = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": VIRTUAL_AUTHENTICATOR})
        page.goto(f"{base}/auth/mfa/passkey")
        page.fill("input[name=name]", "Virtual key")
        page.click("#webauthn-start")
        page.wait_for_selector("#webauthn-start", state="detached")
        # The sign-in page's passkey autofill would take it at once; this person types the password.
        presence = {"authenticatorId": authenticator["authenticatorId"], "enabled": False}
        cdp.send("WebAuthn.setAutomaticPresenceSimulation", presence)
    page.goto(f"{base}/auth/logout")
    _sign_in(page, base, f"mfa-{locale}@example.com")
    check("second step at sign-in")
    assert page.locator("#webauthn-start").count() == (host == DEFAULT_HOST), "a passkey is offered where it is"
    page.fill("input[name=code]", "000000")
    page.click("button[type=submit]")
    check("second step, refused")

    # The pages a link in a message opens (the secret leaves the address bar on the way).
    def follow(name: str, address: str, path: str) -> None:
        check(name, page.goto(_mailed_link(smtp_server, address, host, path, base)))
        assert page.url == f"{base}{path}", (name, page.url)

    follow("new password from a reset link", f"mfa-{locale}@example.com", "/auth/password/reset")
    follow("sign-up, confirming the address", f"joined-{locale}@example.com", "/auth/email/verify")
    follow("account, confirming the new address", f"moved-{locale}@example.com", "/auth/account/email/confirm")
    follow("invitation", f"invited-{locale}@example.com", "/auth/invitation")
    page.click("form[action$='/invitation/passkey'] button[type=submit]")
    page.wait_for_url(f"{base}/auth/mfa/passkey")
    check("invitation, joining with a passkey")
    context.close()

    for name, expected in AUTOCOMPLETE.items():
        tokens = {f["name"]: f["autocomplete"] for f in fields[name]}
        assert {k: tokens.get(k) for k in expected} == expected, (name, tokens)
    for name in REFUSED:
        assert fields[name], f"{name}: no field to check"
        for field in fields[name]:
            assert field["invalid"] == "true" and field["described"], (name, field)
    # The axe context bypasses the CSP; the pages still send theirs, as strict as ever.
    assert policies["sign-in"] == SIGNIN_CSP and policies["consent"] == PAGE_HEADERS["Content-Security-Policy"]
    for name, policy in policies.items():
        assert policy and "default-src 'none'" in policy and "unsafe" not in policy, (name, policy)
    return {name: v for name, v in found.items() if v}


# A tour a look and a language: each has a domain and people of its own, so the four are independent tests.
@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("host", (DEFAULT_HOST, BRANDED_HOST), ids=("default-look", "branded"))
def test_every_page_passes_axe(service, smtp_server, browser, axe, host, locale):
    failing = {name: describe(found) for name, found in _tour(service, smtp_server, browser, axe, host, locale).items()}
    assert failing == {}, "\n".join(f"{host} {page}:\n{text}" for page, text in failing.items())


def test_the_sign_in_page_works_by_keyboard_alone_with_visible_focus(service, browser):
    base = _base(service, DEFAULT_HOST)
    page = browser.new_context().new_page()
    page.goto(f"{base}/auth/login")
    seen = []
    # The e-mail field has the focus on arrival (autofocus); Tab walks on from there.
    for _ in range(12):
        focused = page.evaluate(
            """() => { const e = document.activeElement; const s = getComputedStyle(e);
                 return {name: e.name || e.id || e.textContent.trim(), tag: e.tagName,
                         outline: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0,
                         shadow: s.boxShadow !== 'none'}; }"""
        )
        if focused["tag"] != "BODY":
            seen.append(focused["name"])
            assert focused["outline"] or focused["shadow"], f"no visible focus on {focused}"
        if focused["name"] == "email":
            page.keyboard.type("person@example.com")
        elif focused["name"] == "password":
            page.keyboard.type(PASSWORD)
            break
        page.keyboard.press("Tab")
    assert "email" in seen and seen[-1] == "password", seen
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "You are signed in" in page.content()
    page.context.close()
