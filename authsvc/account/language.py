"""The language switcher of every page: POST /auth/language keeps the choice (docs/translations.md).

The choice goes in a cookie (a browser not signed in), and on the account
once signed in (``user.locale``: e-mails and the ``locale`` claim follow it).
The page the person was on is shown again, without an ``ui_locales`` that
would override what they just chose. No CSRF token: the form is on every page,
and a state-changing request from another site's page is refused before any
view (authsvc.web.deployment); a language is all that could be changed.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from flask import Response, make_response, redirect, request, url_for

from authsvc.account.blueprint import bp
from authsvc.auth import sessions
from authsvc.core.database import db
from authsvc.core.errors import ApiError
from authsvc.core.headers import uncached
from authsvc.core.security import safe_continue
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.web import i18n


def _without_ui_locales(url: str, depth: int = 2) -> str:
    """``url`` without ``ui_locales`` in its query, nor in its ``continue`` URL's (the sign-in page's)."""
    parts = urlsplit(url)
    query = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == "ui_locales":
            continue
        if name == "continue" and depth > 1:
            value = _without_ui_locales(value, depth - 1)
        query.append((name, value))
    return urlunsplit(parts._replace(query=urlencode(query)))


@bp.post("/language")
def set_language() -> Response:
    """Keep the chosen language and go back to the page (a 400 for a language not shipped)."""
    chosen = i18n.languages().match(request.form.get("locale", ""))
    if chosen is None:
        raise ApiError(400, "invalid_request", "'locale' must name a shipped language.")
    domain = current_domain()
    back = safe_continue(request.form.get("continue"), issuer(), default="") or url_for("auth.login_page")
    response = make_response(redirect(_without_ui_locales(back), 303))
    uncached(response)
    config = settings()
    response.set_cookie(
        i18n.COOKIE,
        chosen,
        max_age=i18n.COOKIE_AGE,
        httponly=True,
        secure=config.cookie_secure,
        samesite=config.cookie_samesite,
        path="/",
    )
    user = sessions.session_user(domain)
    if user is not None and user.locale != chosen:
        user.locale = chosen
        db.session.commit()
    return response
