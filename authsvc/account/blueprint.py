"""The account's pages, under /auth beside sign-in: their routes are in ``password`` and ``verification``."""

from __future__ import annotations

from flask import Blueprint, request

from authsvc.auth import lockouts
from authsvc.auth.sessions import SESSION_COOKIE
from authsvc.core import security
from authsvc.core.policy import shows_pages
from authsvc.core.tenancy import current_domain

bp = shows_pages(Blueprint("account", __name__, url_prefix="/auth"))


def mail_recipient() -> str:
    """Whom a request for a link would mail, for its rate limit (authsvc.app.limits): the address asked for,
    else the session asking; an address is keyed as the lockouts key its account (one digest, no address in Redis)."""
    try:
        email = request.form.get("email", "")
    except Exception:  # noqa: BLE001 - malformed input is the view's to refuse
        email = ""
    if email.strip():
        return lockouts.account_key(current_domain().id, email)
    return security.digest(request.cookies.get(SESSION_COOKIE, ""))
