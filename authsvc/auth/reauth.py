"""Sensitive account changes need a recent sign-in (``AUTHSVC_REAUTH_WINDOW`` seconds).

Removing a factor, new recovery codes, adding a passkey or an authenticator
app, setting a password and linking an account at a provider: a session left
open on a shared computer, or a stolen cookie, must not be enough for them.
Whoever is not recent enough signs in again on the sign-in page (``prompt=login``:
password, and the second factor when the user has one), which starts a session
with a fresh ``auth_time`` and returns to the action through a validated ``continue``.
"""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Response, make_response, redirect, request, url_for

from authsvc.auth import sessions
from authsvc.auth.mfa import factors
from authsvc.core.errors import ReauthenticationRequired
from authsvc.core.headers import uncached
from authsvc.core.models import Domain, User
from authsvc.core.security import safe_continue
from authsvc.core.settings import settings
from authsvc.core.tenancy import issuer


def recent(user: User, domain: Domain) -> bool:
    """Whether the request's session signed in within the window, with the second factor if the user has one."""
    record = sessions.current_session(domain)
    if record is None:
        return False
    if sessions.now() - record.auth_time > settings().reauth_window:
        return False
    # A single sign-on session counts: the identity provider owns that sign-in, second factor included.
    amr = record.amr or []
    return not factors.enrolled(user) or "mfa" in amr or "fed" in amr


def required(user: User, domain: Domain, back_to: str | None = None) -> Response | None:
    """None when the session is recent; else the way to sign in again, returning to ``back_to``.

    ``back_to`` (default: this request's URL) must be a page a GET can open: a
    form posted too late is not replayed, the person presses its button again.
    JSON callers get ReauthenticationRequired (401 ``reauthentication_required``).
    """
    if recent(user, domain):
        return None
    here = request.full_path if request.query_string else request.path
    target = safe_continue(back_to or here, issuer(), default=url_for("auth.login_page"))
    login = url_for("auth.login_page") + "?" + urlencode({"prompt": "login", "continue": target})
    if _wants_json():
        raise ReauthenticationRequired(issuer() + login)
    response = make_response(redirect(login, 303))
    uncached(response)
    return response


def _wants_json() -> bool:
    return request.is_json or request.accept_mimetypes.best == "application/json"
