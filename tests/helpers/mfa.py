"""Multi-factor sign-in for the tests: an authenticator app's codes (computed by pyotp, as a phone would),
enrolment on the settings page, and the two steps of /auth/signin.

Used by tests/api/auth/test_mfa.py, tests/api/auth/test_mfa_policy.py and tests/api/auth/test_mfa_oidc.py, through
tests/api/auth/conftest.py, which offers the fixtures defined here.
"""

from __future__ import annotations

import re
import time

import pyotp
import pytest

from tests.helpers import HOST, PASSWORD, clear_of_a_boundary, headers
from tests.helpers.pages import csrf_token


def totp_secret(page) -> str:
    match = re.search(r'<code class="secret">([A-Z2-7]+)</code>', page.get_data(as_text=True))
    assert match, page.get_data(as_text=True)
    return match.group(1)


def recovery_codes(page) -> list[str]:
    return re.findall(r"<li><code>([0-9A-Z]{5}-[0-9A-Z]{5})</code></li>", page.get_data(as_text=True))


def totp_code(secret: str, offset: int = 0) -> str:
    return pyotp.TOTP(secret).at(time.time() + offset)


def signin_password(client, email="person@example.com", password=PASSWORD):
    return client.post("/auth/signin", json={"email": email, "password": password}, headers=headers())


def enrol(client, email="person@example.com") -> tuple[str, list[str]]:
    """Sign in with the password, add an authenticator on the settings page; return its secret and codes."""
    assert signin_password(client, email).status_code == 202
    page = client.get("/auth/mfa/totp", headers=headers())
    assert page.status_code == 200
    assert "<svg" in page.get_data(as_text=True), "the QR code is rendered here"
    secret = totp_secret(page)
    # The previous step's code (still accepted, RFC 6238's window): the current and next stay fresh for the test.
    # Not in a step's last seconds: past the boundary it would be two steps old when the server checks it.
    clear_of_a_boundary(30, margin=2.0)  # a TOTP step
    done = client.post(
        "/auth/mfa/totp", data={"csrf_token": csrf_token(page), "code": totp_code(secret, -30)}, headers=headers()
    )
    assert done.status_code == 200, done.get_data(as_text=True)
    codes = recovery_codes(done)
    return secret, codes


@pytest.fixture
def enrolled(client, setup):
    secret, codes = enrol(client)
    client.delete_cookie("user", domain=HOST)
    return secret, codes


def fresh_code(secret: str, used: set[str]) -> str:
    """A current code not used yet (a code is good once): the next step's if the current one is spent."""
    for offset in (0, 30):
        code = totp_code(secret, offset)
        if code not in used:
            used.add(code)
            return code
    raise AssertionError("no fresh code")


def mfa_token(client, email="person@example.com") -> str:
    """The password step of an account with a second factor: the token its second step names."""
    return signin_password(client, email).get_json()["mfa_token"]


def second_step(client, token, code, **kwargs):
    """The second step of /auth/signin, with an authenticator or recovery code."""
    return client.post("/auth/signin/mfa", json={"mfa_token": token, "code": code}, headers=headers(), **kwargs)


def page_mfa_token(page) -> str:
    """The mfa_token a sign-in page carries to its second step (asking for the code, or enrolling)."""
    return re.search(r'name="mfa_token" type="hidden" value="([^"]+)"', page.get_data(as_text=True)).group(1)
