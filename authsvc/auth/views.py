"""Signing in and out: the programmatic /auth/signin (docs/platform.md#sign-in-session) and the browser pages."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, make_response, redirect, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from authsvc.api import lookup
from authsvc.auth import sessions
from authsvc.auth.forms import LoginForm, LogoutAllForm
from authsvc.auth.mfa import factors
from authsvc.auth.mfa.views import challenge
from authsvc.auth.signin import sign_in
from authsvc.core import actors, audit, validation
from authsvc.core.database import db
from authsvc.core.errors import (
    AddressUnconfirmed,
    ApiError,
    CrossSiteRefused,
    DirectoryUnavailable,
    LockedOut,
    SignInFailed,
    SignInRequired,
    answer,
)
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import Domain, SsoProvider, User
from authsvc.core.policy import Rate, rate_limited
from authsvc.core.security import embedded_cross_site_request, safe_continue
from authsvc.core.tenancy import current_domain, issuer
from authsvc.mail import messages as mail
from authsvc.tokens import revocation
from authsvc.web import i18n
from authsvc.web.pages import page

bp = Blueprint("auth", __name__, url_prefix="/auth", static_folder="../static", static_url_path="/static")


def _signin_parameters() -> dict[str, str]:
    """``email``, ``password`` and ``continue`` from the query string, a form or JSON."""
    values: dict[str, str] = {}
    if request.mimetype == "application/json":
        try:
            body = validation.json_object(request.get_data())
        except validation.Invalid as exc:
            raise ApiError(400, "invalid_request", str(exc)) from None
    else:
        body = request.form
    for name in ("email", "password", "continue"):
        value = body.get(name, request.args.get(name))
        if value is None:
            continue
        if not isinstance(value, str):
            raise ApiError(400, "invalid_request", f"'{name}' must be a string.")
        if name == "email" and any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
            # No address has them, and PostgreSQL refuses NUL in a query parameter.
            raise ApiError(400, "invalid_request", "'email' contains control characters.")
        values[name] = value
    return values


@bp.post("/signin")
@rate_limited(Rate.SIGNIN_ADDRESS, Rate.SIGNIN_ACCOUNT)
def signin() -> Response:
    """Programmatic sign-in: no CSRF token, as the platform's clients send none (docs/platform.md)."""
    params = _signin_parameters()
    if not params.get("email") or not params.get("password"):
        raise ApiError(400, "invalid_request", "'email' and 'password' are required.")
    domain = current_domain()
    user = sign_in(domain, params["email"], params["password"], via="signin")
    if user is None:
        raise SignInFailed()
    target = safe_continue(params.get("continue"), issuer(), default="")
    if factors.required_at_sign_in(user, domain, asked=factors.continue_asks_for_mfa(target)):
        return challenge(user, domain, target, "signin", html=False)
    if target:
        response = make_response(redirect(target, 303))
    else:
        response = jsonify(id=str(user.id), email=user.email, name=user.name, domain=str(domain.id))
        response.status_code = 202
    uncached(response)
    sessions.start_session(response, user, domain)
    return response


# What the sign-in page says when single sign-on sent the user back (?sso_error=).
SSO_MESSAGES = {
    "access_denied": _l("Sign-in with your organisation was cancelled."),
    "not_allowed": _l("Your account at that provider is not allowed to sign in here."),
    "email_in_use": _l(
        "An account with your e-mail address already exists. Sign in with your password, "
        "or ask an administrator to link your accounts."
    ),
    "link_required": _l(
        "An account with your e-mail address already exists and cannot be linked by signing in "
        "with your organisation. Sign in to it first, then link your organisation's sign-in from there."
    ),
    "identity_in_use": _l("That account at your organisation is already linked to another user here."),
    "account_disabled": _l("Your account is disabled."),
    "no_email": _l("The provider did not tell us your e-mail address."),
    "invalid_email": _l("The e-mail address the provider gave for you is not one this service can use."),
}
SSO_DEFAULT_MESSAGE = _l("Sign-in with your organisation did not succeed. Please try again.")
# The sign-in form runs passkey-signin.js (authsvc.auth.passkey_signin), which fetches its options; nothing else runs.
SIGNIN_CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'"
)


def login_form_page(
    domain: Domain,
    form: LoginForm,
    next_url: str,
    error: str | None = None,
    status: int = 200,
    again: bool = False,
) -> Response:
    """The sign-in form (password, a passkey, the domain's SSO providers), with ``error`` if one."""
    response = page(
        "login.html",
        status,
        domain=domain,
        form=form,
        next_url=next_url,
        error=error,
        providers=SsoProvider.of_domain(domain.id),
        user=None,
        again=again,
        can_mail=mail.available(),
        can_signup=domain.signup_open and mail.available(),
    )
    response.headers["Content-Security-Policy"] = SIGNIN_CSP
    return response


@bp.get("/login")
def login_page() -> Response:
    """The sign-in form; ``prompt=login`` shows it even with a session, ``login_hint`` prefills the address."""
    domain = current_domain()
    next_url = safe_continue(request.args.get("continue"), issuer(), default="")
    user = sessions.session_user(domain)
    # An application asked for a new sign-in (OpenID Connect's prompt=login, max_age).
    again = user is not None and request.args.get("prompt") == "login"
    if user is not None and not again:
        if next_url:
            return make_response(redirect(next_url, 303))
        providers = SsoProvider.of_domain(domain.id)
        return page(
            "login.html",
            domain=domain,
            user=user,
            logout_all=LogoutAllForm(),
            providers=providers,
            can_mail=mail.available(),
        )
    sso_error = request.args.get("sso_error")
    error = SSO_MESSAGES.get(sso_error, SSO_DEFAULT_MESSAGE) if sso_error else None
    form = LoginForm(email=request.args.get("login_hint"))
    if form.email.data and not form.email.validate(form):
        form = LoginForm()  # not an address the form would take: no prefill
    return login_form_page(domain, form, next_url, error, again=again)


@bp.post("/login")
@rate_limited(Rate.SIGNIN_ADDRESS, Rate.SIGNIN_ACCOUNT)
def login() -> Response:
    """The sign-in form: the same decision as /auth/signin, plus CSRF protection."""
    domain = current_domain()
    form = LoginForm()
    next_url = safe_continue(form.next.data, issuer(), default="")
    if not form.validate_on_submit():
        if form.csrf_token.errors:
            return login_form_page(domain, form, next_url, _("The form expired. Please sign in again."), 400)
        return login_form_page(domain, form, next_url, _("Enter your e-mail address and password."), 400)
    retry_form = LoginForm(formdata=None, email=form.email.data)
    try:
        user = sign_in(domain, form.email.data, form.password.data, via="login_page")
    except LockedOut as exc:
        refused = answer(exc)
        response = login_form_page(domain, retry_form, next_url, i18n.refusal(refused), refused.status)
        response.headers.update(refused.headers)
        return response
    except (DirectoryUnavailable, AddressUnconfirmed) as exc:
        refused = answer(exc)
        response = login_form_page(domain, retry_form, next_url, i18n.refusal(refused), refused.status)
        response.headers.update(refused.headers)
        return response
    if user is None:
        refused = answer(SignInFailed())
        return login_form_page(domain, retry_form, next_url, i18n.refusal(refused), refused.status)
    if factors.required_at_sign_in(user, domain, asked=factors.continue_asks_for_mfa(next_url)):
        return challenge(user, domain, next_url, "login_page", html=True)
    response = make_response(redirect(next_url or url_for("auth.login_page"), 303))
    sessions.start_session(response, user, domain)
    return response


@bp.get("/logout")
def logout() -> Response:
    """End the session and revoke a bearer token presented with the request."""
    domain = current_domain()
    if embedded_cross_site_request(request.headers):
        raise CrossSiteRefused("Sign-out from another site must be a link the user follows.")
    token = lookup.presented_token(domain)
    if token is not None:
        revocation.revoke_token(token.id)
        audit.record(
            "token.revoked",
            domain_id=domain.id,
            actor=actors.of_user(token.user_id) if token.user_id else None,
            target=f"token:{token.id}",
            details={"count": 1, "via": "logout"},
            commit=False,
        )
        db.session.commit()
    target = safe_continue(request.args.get("continue"), issuer(), url_for("auth.login_page"))
    response = make_response(redirect(target, 303))
    uncached(response)
    record = sessions.end_session(response)
    # A session from a SAML sign-in also signs out at the IdP (Single Logout), which sends the browser back.
    elsewhere = sessions.signed_out_elsewhere(domain, record, target)
    if elsewhere:
        response.headers["Location"] = elsewhere
        uncached(response, referrer_policy=NO_REFERRER)
    return response


@bp.post("/logout/all")
def logout_all() -> Response:
    """End every session of the user and revoke all the user's tokens.

    A bearer token identifies a programmatic caller (no CSRF token needed: a
    browser never sends one on its own); the session cookie needs the page's
    CSRF token.
    """
    domain = current_domain()
    user: User | None
    if lookup.presented():
        user = lookup.authenticate(domain).user
    else:
        user = sessions.session_user(domain)
        if user is None:
            raise SignInRequired("Sign in first.")
        form = LogoutAllForm()
        if not form.validate_on_submit():
            raise ApiError(400, "invalid_request", "The CSRF token is missing or invalid.")
    revoked = sessions.end_everything(user, via="logout_all", actor=actors.of_user(user.id))
    # Recorded even when no token was live: every session ended is an event of its own (webhooks' and
    # Shared Signals' session-revoked), beside the tokens' record.
    audit.record(
        "session.ended",
        domain_id=user.domain_id,
        actor=actors.of_user(user.id),
        target=actors.of_user(user.id),
        details={"via": "logout_all", "revoked_tokens": revoked},
        commit=False,
    )
    db.session.commit()
    if lookup.presented():
        response = jsonify(revoked_tokens=revoked)
    else:
        response = make_response(
            redirect(safe_continue(request.form.get("continue"), issuer(), url_for("auth.login_page")), 303)
        )
    uncached(response)
    sessions.end_session(response)
    return response
