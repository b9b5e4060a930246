"""Sensitive account changes need a recent sign-in (AUTHSVC_REAUTH_WINDOW, 300 s by default).

Removing a factor, new recovery codes, adding an authenticator app or a passkey, setting a password in
the console and linking an SSO account: a session that signed in longer ago is sent to sign in again
(password, and the second factor when the user has one) and back to the action; JSON callers get 401
``reauthentication_required``. The sessions' clock (``sessions.now``) is moved rather than waited for.
"""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from authsvc.auth import sessions
from authsvc.core.models import AuditRecord, MfaFactor
from tests.helpers import HOST, PASSWORD, HttpsClient, headers, in_one_pass, signin
from tests.helpers import sso as sso_helpers
from tests.helpers.console import CONSOLE
from tests.helpers.mfa import enrol, fresh_code, mfa_token, page_mfa_token, second_step
from tests.helpers.pages import csrf_token
from tests.helpers.python_run import run_python

# Here ``oidc`` is the loopback OpenID provider, not the root conftest's OIDC domain.
oidc = sso_helpers.oidc

LATER = 301  # past the default window


@pytest.fixture
def clock(monkeypatch):
    """The sessions' clock, moved forward by ``advance`` instead of by waiting."""

    class Clock:
        offset = 0

        def advance(self, seconds: int) -> None:
            self.offset += seconds

    moved = Clock()
    monkeypatch.setattr(sessions, "now", lambda: int(time.time()) + moved.offset)
    return moved


def sent_to_sign_in_again(response, back_to: str) -> None:
    assert response.status_code == 303, response.get_data(as_text=True)
    location = urlsplit(response.headers["Location"])
    assert location.path == "/auth/login"
    assert parse_qs(location.query) == {"prompt": ["login"], "continue": [back_to]}


def sign_in_again(client, response, secret: str | None = None, used: set[str] | None = None):
    """Follow ``response`` to the sign-in page and sign in there (with a code when ``secret``); the answer."""
    page = client.get(response.headers["Location"], headers=headers())
    assert page.status_code == 200
    assert "Sign in again" in page.get_data(as_text=True)
    back_to = parse_qs(urlsplit(response.headers["Location"]).query)["continue"][0]
    form = {"csrf_token": csrf_token(page), "email": "person@example.com", "password": PASSWORD, "continue": back_to}
    answer = client.post("/auth/login", data=form, headers=headers())
    if secret is not None:
        assert answer.status_code == 200, "the second factor is asked for"
        code = {"csrf_token": csrf_token(answer), "mfa_token": page_mfa_token(answer)}
        code["code"] = fresh_code(secret, used if used is not None else set())
        answer = client.post("/auth/login/mfa", data=code, headers=headers())
    assert answer.status_code == 303
    assert answer.headers["Location"] == back_to
    return answer


def factor_ids(world) -> list[int]:
    return world.query(select(MfaFactor.id).where(MfaFactor.confirmed.is_(True)))


def signed_in_with_code(client, secret: str, used: set[str]) -> None:
    assert second_step(client, mfa_token(client), fresh_code(secret, used)).status_code == 202


def test_removing_a_factor_needs_a_recent_sign_in_with_the_factor(client, world, setup, enrolled, clock):
    secret, _ = enrolled
    used: set[str] = set()
    signed_in_with_code(client, secret, used)
    settings = client.get("/auth/mfa", headers=headers())
    factor_id = re.search(r"/auth/mfa/(\d+)/remove", settings.get_data(as_text=True)).group(1)
    clock.advance(LATER)
    late = client.post(f"/auth/mfa/{factor_id}/remove", data={"csrf_token": csrf_token(settings)}, headers=headers())
    sent_to_sign_in_again(late, "/auth/mfa")
    assert factor_ids(world) == [int(factor_id)]
    sign_in_again(client, late, secret, used)
    settings = client.get("/auth/mfa", headers=headers())
    removed = client.post(f"/auth/mfa/{factor_id}/remove", data={"csrf_token": csrf_token(settings)}, headers=headers())
    assert removed.status_code == 303
    assert removed.headers["Location"] == "/auth/mfa"
    assert factor_ids(world) == []


def test_new_recovery_codes_need_a_recent_sign_in(client, world, setup, enrolled, clock):
    secret, _ = enrolled
    used: set[str] = set()
    signed_in_with_code(client, secret, used)
    settings = client.get("/auth/mfa", headers=headers())
    clock.advance(LATER)
    late = client.post("/auth/mfa/recovery-codes", data={"csrf_token": csrf_token(settings)}, headers=headers())
    sent_to_sign_in_again(late, "/auth/mfa")
    regenerated = select(AuditRecord).where(AuditRecord.event == "mfa.recovery_codes_regenerated")
    assert world.query(regenerated) == []
    sign_in_again(client, late, secret, used)
    settings = client.get("/auth/mfa", headers=headers())
    done = client.post("/auth/mfa/recovery-codes", data={"csrf_token": csrf_token(settings)}, headers=headers())
    assert done.status_code == 200
    assert len(world.query(regenerated)) == 1


def test_a_json_caller_gets_reauthentication_required(client, setup, enrolled, clock):
    secret, _ = enrolled
    signed_in_with_code(client, secret, set())
    settings = client.get("/auth/mfa", headers=headers())
    clock.advance(LATER)
    late = client.post(
        "/auth/mfa/recovery-codes",
        data={"csrf_token": csrf_token(settings)},
        headers=headers(Accept="application/json"),
    )
    assert late.status_code == 401
    body = late.get_json()
    assert body["error"] == "reauthentication_required"
    assert body["reauth_uri"] == f"https://{HOST}/auth/login?prompt=login&continue=%2Fauth%2Fmfa"


def test_adding_an_authenticator_app_needs_a_recent_sign_in_and_comes_back_to_it(client, setup, clock):
    signin(client)
    clock.advance(LATER)
    late = client.get("/auth/mfa/totp", headers=headers())
    sent_to_sign_in_again(late, "/auth/mfa/totp")
    sign_in_again(client, late)
    page = client.get("/auth/mfa/totp", headers=headers())
    assert page.status_code == 200
    assert "<svg" in page.get_data(as_text=True)


def test_adding_a_passkey_needs_a_recent_sign_in(client, setup, clock):
    signin(client)
    assert client.get("/auth/mfa/passkey", headers=headers()).status_code == 200
    clock.advance(LATER)
    for late in (
        client.get("/auth/mfa/passkey", headers=headers()),
        client.post("/auth/mfa/passkey", data={"webauthn": "{}"}, headers=headers()),
    ):
        sent_to_sign_in_again(late, "/auth/mfa/passkey")


def test_adding_a_factor_does_not_make_the_sign_in_recent(client, setup, clock):
    # Enrolling starts a new session (the others end), of the same sign-in: its time carries over.
    clock.advance(0)
    enrol(client)
    clock.advance(LATER - 60)
    settings = client.get("/auth/mfa", headers=headers())
    assert settings.status_code == 200
    late = client.post("/auth/mfa/recovery-codes", data={"csrf_token": csrf_token(settings)}, headers=headers())
    assert late.status_code == 200, "still within the window"
    clock.advance(61)
    late = client.post("/auth/mfa/recovery-codes", data={"csrf_token": csrf_token(settings)}, headers=headers())
    sent_to_sign_in_again(late, "/auth/mfa")


def test_linking_an_sso_account_needs_a_recent_sign_in(client, setup, oidc_id, clock):
    signin(client)
    page = client.get("/auth/oauth2/link", query_string={"id": oidc_id}, headers=headers())
    assert page.status_code == 200
    clock.advance(LATER)
    back_to = f"/auth/oauth2/link?id={oidc_id}"
    sent_to_sign_in_again(client.get("/auth/oauth2/link", query_string={"id": oidc_id}, headers=headers()), back_to)
    late = client.post("/auth/oauth2/link", data={"csrf_token": csrf_token(page), "id": oidc_id}, headers=headers())
    sent_to_sign_in_again(late, back_to)
    assert client.get_cookie("authsvc_sso", domain=HOST, path="/auth/oauth2") is None, "no flow started"
    sign_in_again(client, late)
    page = client.get(back_to, headers=headers())
    started = client.post("/auth/oauth2/link", data={"csrf_token": csrf_token(page), "id": oidc_id}, headers=headers())
    assert started.status_code == 303
    assert started.headers["Location"].startswith("http://127.0.0.1")


def test_setting_a_password_in_the_console_needs_a_recent_sign_in(client, setup, people, clock):
    signin(client, "admin@example.com")
    user_page = f"{CONSOLE}/domains/{setup.domain.id}/users/{setup.person.id}"
    page = client.get(user_page, headers=headers())
    clock.advance(LATER)
    late = client.post(
        user_page + "/password", data={"csrf_token": csrf_token(page), "password": "a-new-password"}, headers=headers()
    )
    sent_to_sign_in_again(late, user_page)
    other = client.application.test_client()
    assert (
        other.post(
            "/auth/signin", json={"email": "person@example.com", "password": PASSWORD}, headers=headers()
        ).status_code
        == 202
    ), "the password is unchanged"


def test_a_longer_window_is_configurable(make_app, setup, clock):
    app = make_app(AUTHSVC_REAUTH_WINDOW=3600)
    app.test_client_class = HttpsClient
    client = app.test_client()
    signin(client)
    clock.advance(LATER)
    assert client.get("/auth/mfa/totp", headers=headers()).status_code == 200
    clock.advance(3600)
    sent_to_sign_in_again(client.get("/auth/mfa/totp", headers=headers()), "/auth/mfa/totp")


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
@pytest.mark.parametrize("value", ["0", "-5", "five minutes", "1.5"])
def test_a_window_that_is_not_a_positive_number_of_seconds_stops_the_start(value):
    result = run_python("import app", AUTHSVC_REAUTH_WINDOW=value)
    assert result.returncode != 0
    assert "AUTHSVC_REAUTH_WINDOW must be" in result.stderr


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_any_positive_window_is_accepted():
    code = "from authsvc import create_app; print(create_app().config['AUTHSVC_REAUTH_WINDOW'])"
    result = run_python(code, AUTHSVC_REAUTH_WINDOW="1", DATABASE_URL="sqlite://", SECRET_KEY="k")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "1"
