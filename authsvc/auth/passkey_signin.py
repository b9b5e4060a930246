"""Signing in with a passkey alone (docs/mfa.md, "Signing in with a passkey").

``GET /auth/signin/passkey`` gives ``navigator.credentials.get`` options naming no
credential, and a ``passkey`` cookie that binds their challenge to this browser
(the challenge lives in Redis under the cookie, for one answer). The answer comes
back to ``POST /auth/signin/passkey`` (JSON, the 202 / 303 of /auth/signin) or,
from the sign-in page, ``POST /auth/login/passkey`` (a form with its CSRF token).
A passkey with user verification is two factors in one: the session's ``amr`` is
``["hwk", "user", "mfa"]``, which the domain's policy and ``acr_values=mfa`` accept
without a second step.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify, make_response, redirect, request, url_for
from flask_babel import gettext as _

from authsvc.auth import lockouts, sessions
from authsvc.auth.forms import LoginForm, PasskeySignInForm
from authsvc.auth.mfa import passkeys
from authsvc.auth.mfa.views import AMR
from authsvc.auth.signin import refused
from authsvc.auth.views import login_form_page
from authsvc.core import actors, audit, security, validation
from authsvc.core.database import db
from authsvc.core.errors import ApiError, LockedOut, PasskeyRefused, answer
from authsvc.core.headers import uncached
from authsvc.core.models import Domain, User
from authsvc.core.policy import Rate, rate_limited
from authsvc.core.security import safe_continue
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.web import i18n

bp = Blueprint("passkey", __name__, url_prefix="/auth")

# The browser's binding of its sign-in challenge (HttpOnly; only the passkey sign-in reads it).
COOKIE = "passkey"
NOT_RECOGNISED = "The passkey was not recognised. Try again, or sign in with your password."


def sign_in(domain: Domain, holder: str, raw: Any, via: str) -> User:
    """The one passkey sign-in decision: the user whose passkey signed this browser's challenge.

    ``PasskeyRefused`` for an unknown passkey, a bad answer, a used or expired challenge and
    a disabled account alike (audited as ``signin.failed``; a bad answer for a real passkey
    counts towards its account's lockout, as a wrong code does); ``LockedOut`` while the
    account or the address is locked. Commits the passkey's new counter and the audit record.
    """
    try:
        factor, user = passkeys.signin_passkey(domain, holder, raw)
    except passkeys.Refused as exc:
        db.session.rollback()
        refused(domain, exc.user, "invalid_passkey", via)
        if exc.user is not None:
            lockouts.note_failure(domain, exc.user.email, exc.user)
        raise PasskeyRefused() from None
    lockouts.refuse_if_locked_out(domain, user.email)
    if user.disabled or not sessions.directory_allows(user):
        db.session.rollback()
        refused(domain, user, "disabled", via)
        raise PasskeyRefused()
    lockouts.forget_failures(domain, user.email)
    details = {"via": via, "method": "passkey", "factor": str(factor.id)}
    audit.record("signin.succeeded", domain_id=domain.id, actor=actors.of_user(user.id), details=details, commit=False)
    db.session.commit()
    return user


def _signed_in(response: Response, user: User, domain: Domain) -> Response:
    """The session a passkey earned, as every sign-in starts one; the binding is spent."""
    uncached(response)
    sessions.start_session(response, user, domain, amr=AMR["passkey"])
    response.delete_cookie(COOKIE, path="/auth", httponly=True, secure=settings().cookie_secure)
    return response


@bp.get("/signin/passkey")
@rate_limited(Rate.PASSKEY_OPTIONS_ADDRESS)
def options() -> Response:
    """Options for a passkey sign-in (any passkey of the domain), bound to this browser by a cookie."""
    domain = current_domain()
    binding = security.new_secret()
    response = current_app.response_class(passkeys.signin_options(domain, binding), mimetype="application/json")
    uncached(response)
    response.set_cookie(
        COOKIE,
        binding,
        max_age=passkeys.CEREMONY_TTL,
        httponly=True,
        secure=settings().cookie_secure,
        samesite="Lax",
        path="/auth",
    )
    return response


@bp.post("/signin/passkey")
@rate_limited(Rate.SIGNIN_ADDRESS)
def signin() -> Response:
    """Programmatic passkey sign-in: ``{"credential": <the browser's answer>, "continue"?}`` as JSON."""
    if request.mimetype != "application/json":
        raise ApiError(415, "unsupported_media_type", "Send the passkey's answer as JSON.")
    try:
        body = validation.json_object(request.get_data())
    except validation.Invalid as exc:
        raise ApiError(400, "invalid_request", str(exc)) from None
    credential, target = body.get("credential"), body.get("continue")
    if not isinstance(credential, dict):
        raise ApiError(400, "invalid_request", "'credential' must be the answer of navigator.credentials.get.")
    if target is not None and not isinstance(target, str):
        raise ApiError(400, "invalid_request", "'continue' must be a string.")
    domain = current_domain()
    user = sign_in(domain, request.cookies.get(COOKIE, ""), credential, via="passkey")
    target = safe_continue(target, issuer(), default="")
    if target:
        response = make_response(redirect(target, 303))
    else:
        response = jsonify(id=str(user.id), email=user.email, name=user.name, domain=str(domain.id))
        response.status_code = 202
    return _signed_in(response, user, domain)


@bp.post("/login/passkey")
@rate_limited(Rate.SIGNIN_ADDRESS)
def login() -> Response:
    """The sign-in page's passkey (passkey-signin.js posts the answer): on to ``continue``, else the page."""
    domain = current_domain()
    form = PasskeySignInForm()
    next_url = safe_continue(form.next.data, issuer(), default="")
    if not form.validate_on_submit():
        return login_form_page(
            domain, LoginForm(formdata=None), next_url, _("The form expired. Please sign in again."), 400
        )
    try:
        user = sign_in(domain, request.cookies.get(COOKIE, ""), form.webauthn.data, via="passkey_page")
    except (PasskeyRefused, LockedOut) as exc:
        refusal = answer(exc)
        response = login_form_page(domain, LoginForm(formdata=None), next_url, i18n.refusal(refusal), refusal.status)
        response.headers.update(refusal.headers)
        return response
    return _signed_in(make_response(redirect(next_url or url_for("auth.login_page"), 303)), user, domain)
