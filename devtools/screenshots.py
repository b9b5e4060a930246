"""Regenerate the documentation's screenshots from the real pages: ``python -m devtools.screenshots``.

Starts ``./scripts/run`` (a fresh instance directory, a free port), signs in as the demo person
in headless Chromium (Debian's ``chromium``, driven by Playwright, as the browser tests do) and
writes each page's picture into docs/. A screenshot made this way cannot drift from the page it
shows: run this after changing a page. Not part of the test command (a browser costs seconds).

    python -m devtools.screenshots            # every picture below
    python -m devtools.screenshots console    # only docs/console.png
    python -m devtools.screenshots mfa        # docs/mfa-totp.png, mfa-recovery-codes.png, mfa-code.png
    python -m devtools.screenshots password-reset  # only docs/password-reset.png (signin, password-forgot likewise)
    python -m devtools.screenshots signup invitation  # docs/signup.png and docs/invitation.png
    python -m devtools.screenshots account account-sessions  # docs/account.png, docs/account-sessions.png
    python -m devtools.screenshots branding   # docs/branding-before.png, branding-after.png, console-branding.png
    python -m devtools.screenshots branding-languages  # the same in Arabic (-ar) and German (-de): docs/branding.md
    python -m devtools.screenshots consent    # docs/consent.png
"""

from __future__ import annotations

import email
import email.policy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from devtools.processes import free_port

if TYPE_CHECKING:
    from playwright.sync_api import CDPSession, Page

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]


def _start(instance: Path, port: int) -> subprocess.Popen:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(instance), "PORT": str(port)}
    process = subprocess.Popen(
        [str(REPO / "scripts/run")],
        cwd=REPO,
        env={**env, "AUTHSVC_INSTANCE_DIR": str(instance), "AUTHSVC_ACCESS_LOG": "0"},
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)  # noqa: S310 - our loopback
            return process
        except OSError:
            if process.poll() is not None:
                raise SystemExit("scripts/run stopped before it served") from None
            time.sleep(0.3)
    raise SystemExit("scripts/run did not serve within 180 s")


def _sign_in(page: Page, base: str, person: dict, then: str = "") -> None:
    page.goto(f"{base}/auth/login" + (f"?continue={then}" if then else ""))
    page.fill("input[name=email]", person["email"])
    page.fill("input[name=password]", person["password"])
    page.click("button[type=submit]")


def signin(page: Page, base: str, person: dict, instance: Path) -> None:
    """The sign-in page, with its passkey button (shown by passkey-signin.js where the browser has WebAuthn)."""
    page.goto(f"{base}/auth/login")
    page.wait_for_selector("#passkey-start", state="visible")
    page.screenshot(path=str(DOCS / "signin.png"))


def console(page: Page, base: str, person: dict, instance: Path) -> None:
    _sign_in(page, base, person)
    page.goto(f"{base}/auth/admin/")
    page.get_by_role("link", name="Demo", exact=True).click()  # the demo domain: its Applications
    page.wait_for_url("**/applications**")
    page.screenshot(path=str(DOCS / "console.png"))


def _virtual_authenticator(page: Page) -> tuple[CDPSession, str]:
    """A passkey in Chromium (the DevTools protocol's virtual authenticator), as the browser tests make one."""
    cdp = page.context.new_cdp_session(page)
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


def mfa(page: Page, base: str, person: dict, instance: Path) -> None:
    """docs/mfa-totp.png, mfa-recovery-codes.png and mfa-code.png: the demo person adds an authenticator
    app's page (not confirmed), then a passkey (whose recovery codes come with it), then signs in again."""
    cdp, authenticator = _virtual_authenticator(page)
    _sign_in(page, base, person, then="/auth/mfa")
    page.wait_for_url("**/auth/mfa")
    page.click("text=Add an authenticator app")
    page.wait_for_selector(".qr svg")
    page.screenshot(path=str(DOCS / "mfa-totp.png"), full_page=True)  # taller than the window
    page.goto(f"{base}/auth/mfa")
    page.click("text=Add a passkey or security key")
    page.wait_for_url("**/auth/mfa/passkey")
    page.fill("input[name=name]", "Laptop")
    page.click("#webauthn-start")
    page.wait_for_selector("text=Your recovery codes")
    page.screenshot(path=str(DOCS / "mfa-recovery-codes.png"))
    # The sign-in page offers the passkey in its autofill (conditional UI), which a simulated presence
    # accepts at once: this time the person types the password, and the second step asks for the passkey.
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": authenticator, "enabled": False})
    page.goto(f"{base}/auth/logout")
    _sign_in(page, base, person, then="/auth/mfa")
    page.wait_for_selector("#webauthn-start")
    page.screenshot(path=str(DOCS / "mfa-code.png"))


def password_forgot(page: Page, base: str, person: dict, instance: Path) -> None:
    page.goto(f"{base}/auth/password/forgot")
    page.screenshot(path=str(DOCS / "password-forgot.png"))


def password_reset(page: Page, base: str, person: dict, instance: Path) -> None:
    """Ask for a link; without SMTP, ./scripts/run writes the message to instance/mail/ (docs/account.md)."""
    mail = instance / "mail"
    page.goto(f"{base}/auth/password/forgot")
    page.fill("input[name=email]", person["email"])
    page.click("button[type=submit]")
    deadline = time.monotonic() + 30
    while not list(mail.glob("*.eml")) and time.monotonic() < deadline:
        time.sleep(0.2)
    [written] = list(mail.glob("*.eml"))
    message = email.message_from_bytes(written.read_bytes(), policy=email.policy.default)
    body = message.get_body(preferencelist=("plain",))
    [link] = re.findall(r"https?://\S+\?token=\S+", body.get_content() if body is not None else "")
    page.goto(link)
    page.screenshot(path=str(DOCS / "password-reset.png"))


def _flask(instance: Path, *args: str) -> dict:
    """A ``flask --app app`` command on the instance ./scripts/run serves (its JSON answer)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(instance),
        "AUTHSVC_INSTANCE_DIR": str(instance),
    }
    done = subprocess.run(
        [str(REPO / ".venv/bin/flask"), "--app", "app", *args], cwd=REPO, env=env, capture_output=True, check=True
    )
    answer: dict = json.loads(done.stdout)
    return answer


def _written_link(instance: Path, to: str) -> str:
    """The token link of the message to ``to`` that development wrote to instance/mail/."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for written in (instance / "mail").glob("*.eml"):
            message = email.message_from_bytes(written.read_bytes(), policy=email.policy.default)
            body = message.get_body(preferencelist=("plain",))
            if message["To"] == to and body is not None:
                [link] = re.findall(r"https?://\S+\?token=\S+", body.get_content())
                return link
        time.sleep(0.2)
    raise SystemExit(f"no message to {to} in {instance / 'mail'}")


def signup(page: Page, base: str, person: dict, instance: Path) -> None:
    """The demo domain with sign-up on (``domains update --signup open``), as its sign-in page links to it."""
    _flask(instance, "domains", "update", "--domain", "localhost", "--signup", "open")
    page.goto(f"{base}/auth/login")
    page.click("text=Create an account")
    page.screenshot(path=str(DOCS / "signup.png"))


def invitation(page: Page, base: str, person: dict, instance: Path) -> None:
    """Invite from the command line; development writes the message to instance/mail/, whose link names the
    domain's own https host: the page is opened on this server's origin instead."""
    _flask(instance, "users", "invite", "--domain", "localhost", "--email", "invitee@example.com", "--name", "Invitee")
    link = _written_link(instance, "invitee@example.com")
    page.goto(base + link[link.index("/auth/invitation") :])
    page.screenshot(path=str(DOCS / "invitation.png"))


# The other browser signed in to the same account, so that the sessions lists have two rows.
PHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile Safari/604.1"
DESKTOP = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"


def account(page: Page, base: str, person: dict, instance: Path) -> None:
    """The account page, signed in from a second browser too."""
    other = page.context.browser.new_context(user_agent=PHONE) if page.context.browser else None
    if other is not None:
        _sign_in(other.new_page(), base, person)
        other.close()
    _sign_in(page, base, person, then="/auth/account")
    page.set_viewport_size({"width": 1100, "height": 1900})
    page.goto(f"{base}/auth/account")
    page.screenshot(path=str(DOCS / "account.png"), full_page=True)


def account_sessions(page: Page, base: str, person: dict, instance: Path) -> None:
    other = page.context.browser.new_context(user_agent=DESKTOP) if page.context.browser else None
    if other is not None:
        _sign_in(other.new_page(), base, person)
        other.close()
    _sign_in(page, base, person, then="/auth/account/sessions")
    page.goto(f"{base}/auth/account/sessions")
    page.screenshot(path=str(DOCS / "account-sessions.png"))


def _brand(instance: Path) -> None:
    """Brand the demo domain from the command line, as docs/branding.md shows."""
    from PIL import Image, ImageDraw

    logo = instance / "logo.png"
    picture = Image.new("RGBA", (96, 96), (0, 0, 0, 0))
    ImageDraw.Draw(picture).ellipse((4, 4, 92, 92), fill=(255, 212, 0, 255), outline=(16, 24, 32, 255), width=8)
    picture.save(logo)
    _flask(
        instance, "domains", "brand", "--domain", "localhost", "--display-name", "Acme Corp", "--logo", str(logo),
        "--primary-color", "#FFD400", "--background-color", "#101820", "--support-url", "https://help.acme.example/",
        "--privacy-url", "https://acme.example/privacy", "--terms-url", "https://acme.example/terms",
    )  # fmt: skip


def branding(page: Page, base: str, person: dict, instance: Path) -> None:
    """The demo domain's sign-in page in the default look, then branded from the command line (docs/branding.md)."""
    page.goto(f"{base}/auth/login")
    page.screenshot(path=str(DOCS / "branding-before.png"))
    _brand(instance)
    try:
        page.goto(f"{base}/auth/login")
        page.screenshot(path=str(DOCS / "branding-after.png"))
        _sign_in(page, base, person)
        page.goto(f"{base}/auth/admin/")
        page.get_by_role("link", name="Demo", exact=True).click()
        page.get_by_role("link", name="Branding", exact=True).click()
        page.wait_for_url("**/branding")
        page.screenshot(path=str(DOCS / "console-branding.png"), full_page=True)
    finally:
        _flask(instance, "domains", "brand", "--domain", "localhost", "--reset")


def branding_languages(page: Page, base: str, person: dict, instance: Path) -> None:
    """The sign-in page before and after branding in Arabic (right to left), and branded in German: the browser's
    language picks the catalog; the brand's name, colours and logo stay as set."""
    page.set_extra_http_headers({"Accept-Language": "ar"})
    page.goto(f"{base}/auth/login")
    page.screenshot(path=str(DOCS / "branding-before-ar.png"))
    _brand(instance)
    try:
        for language in ("ar", "de"):
            page.set_extra_http_headers({"Accept-Language": language})
            page.goto(f"{base}/auth/login")
            page.screenshot(path=str(DOCS / f"branding-after-{language}.png"))
    finally:
        _flask(instance, "domains", "brand", "--domain", "localhost", "--reset")


def consent(page: Page, base: str, person: dict, instance: Path) -> None:
    """The consent page of an application with an admin's logo and a described scope (docs/branding.md)."""
    from PIL import Image, ImageDraw

    logo = instance / "app-logo.png"
    picture = Image.new("RGBA", (96, 96), (36, 86, 211, 255))
    ImageDraw.Draw(picture).rectangle((24, 24, 72, 72), fill=(255, 255, 255, 255))
    picture.save(logo)
    client_id = _flask(
        instance, "apps", "create", "--domain", "localhost", "--name", "Room Booker", "--consent",
        "--redirect-uri", "https://rooms.example.com/callback", "--scopes", "openid email public mqtt.read",
    )["client_id"]  # fmt: skip
    _flask(instance, "apps", "update", "--client-id", client_id, "--logo", str(logo))
    _flask(
        instance, "domains", "scopes", "describe", "--domain", "localhost", "--scope", "mqtt.read",
        "--text", "Read the occupancy sensors of the rooms you book.",
    )  # fmt: skip
    _sign_in(page, base, person)
    page.goto(
        f"{base}/auth/oauth/authorize?response_type=code&client_id={client_id}&scope=openid%20email%20mqtt.read"
        "&redirect_uri=https://rooms.example.com/callback&state=s"
        "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"
    )
    page.screenshot(path=str(DOCS / "consent.png"))


# Each makes docs/<name>.png, but mfa and the branding ones: mfa's three pictures follow one person's enrolment.
SHOTS: dict[str, Callable] = {
    "signin": signin,
    "console": console,
    "mfa": mfa,
    "password-forgot": password_forgot,
    "password-reset": password_reset,
    "signup": signup,
    "invitation": invitation,
    "account": account,
    "account-sessions": account_sessions,
    "branding": branding,
    "branding-languages": branding_languages,
    "consent": consent,
}


def main(names: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if not chromium:
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    unknown = set(names) - set(SHOTS)
    if unknown:
        raise SystemExit(f"unknown screenshot(s) {', '.join(sorted(unknown))}; known: {', '.join(SHOTS)}")
    instance = Path(tempfile.mkdtemp(prefix="authsvc-screenshots-"))
    port = free_port()
    process = _start(instance, port)
    try:
        person = json.loads((instance / "demo.json").read_text())["person"]
        base = f"http://localhost:{port}"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
            try:
                for name in names or list(SHOTS):
                    context = browser.new_context(viewport={"width": 1100, "height": 640})
                    SHOTS[name](context.new_page(), base, person, instance)
                    context.close()
                    several = name in ("mfa", "branding", "branding-languages")
                    print(f"wrote docs/{name}-*.png" if several else f"wrote docs/{name}.png")
            finally:
                browser.close()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        shutil.rmtree(instance, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
