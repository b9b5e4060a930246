"""Multi-factor sign-in: the second step of /auth/signin and of the sign-in page.

``challenge`` is called by the password views once the password is right: an
enrolled user (or one the domain's policy covers) gets an ``mfa_token`` instead
of a session. The session starts only once the second factor passed, with
``amr`` saying so, and it is a new session (any earlier one of the browser ends).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify, make_response, redirect, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from authsvc.auth import lockouts, sessions
from authsvc.auth.mfa import factors, passkeys, pending
from authsvc.auth.mfa.forms import CodeForm, EnrolForm
from authsvc.auth.signin import refused
from authsvc.core import actors, audit, validation
from authsvc.core.database import db
from authsvc.core.errors import ApiError, LockedOut, PendingSignInGone, WrongCode, answer
from authsvc.core.headers import uncached
from authsvc.core.marks import N_
from authsvc.core.models import Domain, User
from authsvc.core.policy import Rate, rate_limited
from authsvc.core.security import safe_continue
from authsvc.core.tenancy import current_domain, issuer
from authsvc.web import i18n
from authsvc.web.pages import page

bp = Blueprint("mfa", __name__, url_prefix="/auth")

# OpenID Connect's amr (RFC 8176) for each second factor; "mfa" says there were two.
# A passkey alone (authsvc.auth.passkey_signin): the key ("hwk") and the user verification it required
# ("user", the PIN or biometric RFC 8176 has no one value for) are the two factors.
AMR = {
    "otp": ["pwd", "otp", "mfa"],
    "recovery_code": ["pwd", "otp", "mfa"],
    "hwk": ["pwd", "hwk", "mfa"],
    "passkey": ["hwk", "user", "mfa"],
}
# The second-factor pages run mfa.js (passkeys); nothing else may run.
SCRIPT_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
EXPIRED = N_("The sign-in step expired or was already used. Sign in again.")
WRONG_CODE = N_("The code is incorrect or was used already.")


# After the password: the challenge.


def challenge(user: User, domain: Domain, target: str, via: str, *, html: bool) -> Response:
    """The answer to a correct password when ``factors.required_at_sign_in`` says a second factor is due."""
    enrol = not factors.enrolled(user)
    token, binding = pending.start(user, domain, target=target, via=via, enrol=enrol)
    if html:
        response = _enrol_page(user, domain, token) if enrol else _code_page(token, user=user)
    elif enrol:
        # Setting up an authenticator needs a page to show its QR code on.
        response = jsonify(
            error="mfa_enrolment_required",
            error_description="This account must set up a second factor: sign in on the sign-in page.",
            enrol_uri=f"{issuer()}{url_for('auth.login_page')}",
        )
        response.status_code = 401
    else:
        response = jsonify(
            error="mfa_required",
            error_description="Send a code from your authenticator app, or a recovery code, to /auth/signin/mfa.",
            mfa_token=token,
            methods=factors.methods(user),
        )
        response.status_code = 401
    uncached(response)
    pending.bind(response, binding)
    return response


def _code_page(token: str, error: str | None = None, status: int = 200, user: User | None = None) -> Response:
    domain = current_domain()
    if user is None:
        # Later posts of the page carry the browser's binding; the first answer sets it.
        record = pending.read(token, domain)
        user = db.session.get(User, record.user) if record else None
        # The authorisation request's ui_locales, on the way back to it (authsvc.web.i18n).
        i18n.carry_from(record.continue_url if record else None)
    options = None
    if user is not None and passkeys.passkeys(user):
        options = passkeys.authentication_options(user, domain, token)
    form = CodeForm(formdata=None, mfa_token=token)
    response = page("mfa_code.html", status, domain=domain, form=form, error=error, user=None, options=options)
    response.headers["Content-Security-Policy"] = SCRIPT_CSP
    return response


def _enrol_page(user: User, domain: Domain, token: str, error: str | None = None, status: int = 200) -> Response:
    factor = factors.start_totp_enrolment(user)
    db.session.commit()
    form = EnrolForm(formdata=None, mfa_token=token)
    uri = factors.provisioning_uri(factor, user, domain)
    context = {"qr": factors.qr_svg(uri), "secret": factors.totp_secret(factor), "action": url_for("mfa.login_enrol")}
    return page("mfa_enrol.html", status, domain=domain, form=form, error=error, user=None, **context)


# The second step.


def _pending_user(token: str, domain: Domain) -> tuple[pending.PendingSignIn, User]:
    record = pending.read(token, domain)
    user = db.session.get(User, record.user) if record else None
    if record is None or user is None or user.disabled:
        raise PendingSignInGone(EXPIRED)
    i18n.carry_from(record.continue_url)
    return record, user


def _check_code(
    record: pending.PendingSignIn, user: User, domain: Domain, token: str, code: str, webauthn: object
) -> str:
    """Which factor passed (``otp``, ``recovery_code`` or ``hwk``); a wrong answer counts towards the lockout."""
    lockouts.refuse_if_locked_out(domain, user.email)
    if webauthn:
        try:
            passkeys.authenticate(user, domain, token, webauthn)
            return "hwk"
        except passkeys.Refused:
            pass
    elif factors.verify_any_totp(user, code):
        return "otp"
    elif factors.use_recovery_code(user, code):
        return "recovery_code"
    db.session.rollback()
    refused(domain, user, "invalid_mfa_code", record.via)
    lockouts.note_failure(domain, user.email, user)
    raise WrongCode(WRONG_CODE)


def _finish(token: str, user: User, domain: Domain, method: str, response: Response) -> None:
    """Claim the pending sign-in (once) and start the session that the second factor earned."""
    record = pending.claim(token, domain)
    if record is None:
        db.session.rollback()
        raise PendingSignInGone(EXPIRED)
    lockouts.forget_failures(domain, user.email)
    audit.record(
        "signin.mfa_passed",
        domain_id=domain.id,
        actor=actors.of_user(user.id),
        details={"via": record.via, "method": method},
        commit=False,
    )
    if method == "recovery_code":
        audit.record("mfa.recovery_code_used", domain_id=domain.id, actor=actors.of_user(user.id), commit=False)
    db.session.commit()
    sessions.start_session(response, user, domain, amr=AMR[method])
    pending.forget(response)


def _body() -> dict:
    if request.mimetype == "application/json":
        try:
            return validation.json_object(request.get_data())
        except validation.Invalid as exc:
            raise ApiError(400, "invalid_request", str(exc)) from None
    return request.form


def _string(body: dict, name: str, *, required: bool = True) -> str:
    value = body.get(name, request.args.get(name))
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value or len(value) > 200:
        raise ApiError(400, "invalid_request", f"'{name}' is required, as a string.")
    return value


@bp.post("/signin/mfa/webauthn")
@rate_limited(Rate.MFA_ADDRESS)
def signin_webauthn_options() -> Response:
    """``navigator.credentials.get`` options for a pending sign-in's passkeys (``mfa_token``)."""
    domain = current_domain()
    token = _string(_body(), "mfa_token")
    _, user = _pending_user(token, domain)
    if not passkeys.passkeys(user):
        raise ApiError(400, "invalid_request", "This account has no passkey.")
    response = current_app.response_class(
        passkeys.authentication_options(user, domain, token), mimetype="application/json"
    )
    uncached(response)
    return response


@bp.post("/signin/mfa")
@rate_limited(Rate.MFA_ADDRESS)
def signin_mfa() -> Response:
    """The programmatic second step: the same 202 / 303 answer as /auth/signin."""
    domain = current_domain()
    body = _body()
    token = _string(body, "mfa_token")
    webauthn = body.get("webauthn")
    code = "" if webauthn else _string(body, "code")
    if webauthn is not None and not isinstance(webauthn, dict | str):
        raise ApiError(400, "invalid_request", "'webauthn' must be the credential the browser returned.")
    record, user = _pending_user(token, domain)
    method = _check_code(record, user, domain, token, code, webauthn)
    target = record.continue_url
    if target:
        response = make_response(redirect(target, 303))
    else:
        body = {"id": str(user.id), "email": user.email, "name": user.name, "domain": str(domain.id)}
        if method == "recovery_code":
            # A spent recovery code may mean a lost phone: the client should offer re-enrolment.
            body["notice"] = "recovery_code_used"
        response = jsonify(body)
        response.status_code = 202
    uncached(response)
    _finish(token, user, domain, method, response)
    return response


@bp.post("/login/mfa")
@rate_limited(Rate.MFA_ADDRESS)
def login_mfa() -> Response:
    """The sign-in page's second step."""
    domain = current_domain()
    form = CodeForm()
    token = form.mfa_token.data or ""
    if not form.validate_on_submit() or not (form.code.data or form.webauthn.data):
        if form.csrf_token.errors:
            return _code_page(token, _l("The form expired. Please sign in again."), 400)
        return _code_page(token, _l("Enter the code."), 400)
    try:
        record, user = _pending_user(token, domain)
    except PendingSignInGone as exc:
        return page(
            "message.html",
            answer(exc).status,
            title=_("Sign in again"),
            message=_(EXPIRED),
            link=url_for("auth.login_page"),
        )
    try:
        method = _check_code(record, user, domain, token, form.code.data or "", form.webauthn.data)
    except LockedOut as exc:
        refused = answer(exc)
        response = _code_page(token, i18n.refusal(refused), refused.status)
        response.headers.update(refused.headers)
        return response
    except WrongCode as exc:
        return _code_page(token, _l(str(exc)), answer(exc).status)
    target = safe_continue(record.continue_url, issuer(), default="") or url_for("auth.login_page")
    if method == "recovery_code":
        # A spent recovery code may mean a lost phone: offer a new authenticator first.
        back: dict[str, Any] = {"continue": target}
        target = url_for("mfa_settings.settings", recovered=1, **back)
    response = make_response(redirect(target, 303))
    _finish(token, user, domain, method, response)
    return response


@bp.post("/login/mfa/enrol")
@rate_limited(Rate.MFA_ADDRESS)
def login_enrol() -> Response:
    """Enrolment that the domain's policy asked for during sign-in: the first code confirms the app."""
    domain = current_domain()
    form = EnrolForm()
    token = form.mfa_token.data or ""
    expired = page("message.html", 401, title=_("Sign in again"), message=_(EXPIRED), link=url_for("auth.login_page"))
    try:
        record, user = _pending_user(token, domain)
    except PendingSignInGone:
        return expired
    if not record.enrol or not form.validate_on_submit():
        return _enrol_page(user, domain, token, _("The form expired or the code is missing. Try again."), 400)
    factor = factors.unconfirmed_factor(user)
    lockouts.refuse_if_locked_out(domain, user.email)
    if factor is None or not factors.verify_totp(factor, form.code.data):
        db.session.rollback()
        refused(domain, user, "invalid_mfa_code", record.via)
        lockouts.note_failure(domain, user.email, user)
        return _enrol_page(user, domain, token, _(WRONG_CODE), 401)
    codes = factors.confirm(factor)
    audit.record(
        "mfa.enrolled", domain_id=domain.id, actor=actors.of_user(user.id), details={"kind": "totp"}, commit=False
    )
    factors.changed(user, domain, "added", "totp")
    target = safe_continue(record.continue_url, issuer(), default="") or url_for("auth.login_page")
    response = page("mfa_codes.html", domain=domain, codes=codes, next_url=target, user=None)
    _finish(token, user, domain, "otp", response)
    return response
