"""A signed-in user's own page for second factors: add an authenticator app, remove one,
get new recovery codes. Each change is audited; removing a factor ends the user's other sessions.
Every change needs a recent sign-in (authsvc.auth.reauth)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, make_response, redirect, request, url_for
from flask_babel import gettext as _

from authsvc.auth import reauth, sessions
from authsvc.auth.mfa import factors, passkeys
from authsvc.auth.mfa.forms import ActionForm, EnrolForm, PasskeyForm
from authsvc.auth.mfa.views import SCRIPT_CSP
from authsvc.core import actors, audit, validation
from authsvc.core.database import db
from authsvc.core.models import Domain, MfaFactor, User
from authsvc.core.policy import shows_pages
from authsvc.core.security import safe_continue
from authsvc.core.tenancy import current_domain, issuer
from authsvc.web.pages import page

bp = shows_pages(Blueprint("mfa_settings", __name__, url_prefix="/auth/mfa"))


def _signed_in() -> Response | tuple[User, Domain]:
    """The session's user and domain, or the answer that sends the browser to sign in, back here."""
    domain = current_domain()
    user = sessions.session_user(domain)
    if user is None:
        here: dict[str, Any] = {"continue": request.full_path if request.query_string else request.path}
        return make_response(redirect(url_for("auth.login_page", **here), 303))
    return user, domain


def _signed_in_recently(return_to: str) -> Response | tuple[User, Domain]:
    """The session's user and domain, if they signed in recently enough to change their second
    factors; otherwise the answer that sends them to sign in (again), back to ``return_to``."""
    found = _signed_in()
    if not isinstance(found, tuple):
        return found
    user, domain = found
    stale = reauth.required(user, domain, return_to)
    return stale if stale is not None else (user, domain)


def _amr(domain: Domain) -> list[str]:
    """How the request's session signed in (``pwd`` for a session that does not say)."""
    session = sessions.current_session(domain)
    return (session.amr if session else None) or ["pwd"]


def _rotate(response: Response, user: User, domain: Domain, amr: list[str]) -> None:
    """End every other session of ``user`` and give this browser a new one, of the same sign-in."""
    session = sessions.current_session(domain)
    signed_in_at = session.auth_time if session else 0
    sessions.invalidate_sessions(user)
    db.session.commit()
    sessions.start_session(response, user, domain, amr=amr, auth_time=signed_in_at)


@bp.get("")
def settings() -> Response:
    found = _signed_in()
    if not isinstance(found, tuple):
        return found
    user, domain = found
    next_url = safe_continue(request.args.get("continue"), issuer(), default="")
    return page(
        "mfa_settings.html",
        domain=domain,
        user=user,
        factors=factors.confirmed_factors(user),
        recovered=bool(request.args.get("recovered")),
        policy=factors.policy_applies(user, domain) and not user.service_account,
        form=ActionForm(),
        next_url=next_url,
    )


@bp.route("/totp", methods=["GET", "POST"])
def add_totp() -> Response:
    """Add an authenticator app: a QR code and the secret as text, confirmed by a first valid code."""
    found = _signed_in_recently(url_for(".add_totp"))
    if not isinstance(found, tuple):
        return found
    user, domain = found
    form = EnrolForm()
    factor = factors.unconfirmed_factor(user) if request.method == "POST" else None
    if request.method == "POST" and form.validate_on_submit() and factor is not None:
        if factors.verify_totp(factor, form.code.data):
            codes = factors.confirm(factor)
            audit.record("mfa.enrolled", domain_id=domain.id, actor=actors.of_user(user.id), details={"kind": "totp"})
            response = page("mfa_codes.html", domain=domain, codes=codes, next_url=url_for(".settings"), user=user)
            # The session that just proved the app counts as a multi-factor one from now on.
            factors.changed(user, domain, "added", "totp")
            amr = _amr(domain)
            _rotate(response, user, domain, list(dict.fromkeys([*amr, "otp", "mfa"])))
            return response
        db.session.rollback()
        error, status = _("The code is incorrect. Try the current one."), 401
    elif request.method == "POST":
        error, status = _("The form expired or the code is missing. Try again."), 400
    else:
        error, status = None, 200
    factor = factor or factors.start_totp_enrolment(user)
    db.session.commit()
    uri = factors.provisioning_uri(factor, user, domain)
    response = page(
        "mfa_enrol.html",
        status,
        domain=domain,
        form=EnrolForm(formdata=None),
        error=error,
        action=url_for(".add_totp"),
        qr=factors.qr_svg(uri),
        secret=factors.totp_secret(factor),
        user=user,
    )
    return response


@bp.route("/passkey", methods=["GET", "POST"])
def add_passkey() -> Response:
    """Register a passkey or security key (WebAuthn); mfa.js runs the browser's side."""
    found = _signed_in_recently(url_for(".add_passkey"))
    if not isinstance(found, tuple):
        return found
    user, domain = found
    holder = request.cookies[sessions.SESSION_COOKIE]
    form = PasskeyForm()
    error, status = None, 200
    if request.method == "POST":
        if not form.validate_on_submit():
            error, status = _("The form expired or the passkey did not answer. Try again."), 400
        else:
            first = not factors.enrolled(user)
            try:
                factor = passkeys.register(user, domain, holder, form.webauthn.data, (form.name.data or "").strip())
            except passkeys.Refused as exc:
                db.session.rollback()
                error, status = _("Not added: %(reason)s.", reason=exc), 400
            else:
                codes = factors.new_recovery_codes(user) if first else []
                details = {"kind": "webauthn", "name": factor.name}
                audit.record(
                    "mfa.enrolled", domain_id=domain.id, actor=actors.of_user(user.id), details=details, commit=False
                )
                response = page("mfa_codes.html", domain=domain, codes=codes, next_url=url_for(".settings"), user=user)
                factors.changed(user, domain, "added", "webauthn")
                amr = _amr(domain)
                _rotate(response, user, domain, list(dict.fromkeys([*amr, "hwk", "mfa"])))
                return response
    options = passkeys.registration_options(user, domain, holder)
    response = page(
        "mfa_passkey.html",
        status,
        domain=domain,
        form=PasskeyForm(formdata=None),
        error=error,
        options=options,
        user=user,
    )
    response.headers["Content-Security-Policy"] = SCRIPT_CSP
    return response


@bp.post("/recovery-codes")
def new_recovery_codes() -> Response:
    found = _signed_in_recently(url_for(".settings"))
    if not isinstance(found, tuple):
        return found
    user, domain = found
    if not ActionForm().validate_on_submit() or not factors.enrolled(user):
        return page(
            "message.html", 400, title=_("Not done"), message=_("The form expired, or you have no second factor.")
        )
    codes = factors.new_recovery_codes(user)
    audit.record("mfa.recovery_codes_regenerated", domain_id=domain.id, actor=actors.of_user(user.id))
    response = page("mfa_codes.html", domain=domain, codes=codes, next_url=url_for(".settings"), user=user)
    return response


@bp.post("/<factor_id>/remove")
def remove(factor_id: str) -> Response:
    found = _signed_in_recently(url_for(".settings"))
    if not isinstance(found, tuple):
        return found
    user, domain = found
    record_id = validation.record_id(factor_id)
    factor = db.session.get(MfaFactor, record_id) if record_id is not None else None
    if not ActionForm().validate_on_submit() or factor is None or factor.user_id != user.id:
        return page(
            "message.html", 400, title=_("Not done"), message=_("The form expired, or there is no such factor.")
        )
    db.session.delete(factor)
    db.session.flush()
    if not factors.enrolled(user):
        factors.reset(user)
    audit.record(
        "mfa.factor_removed",
        domain_id=domain.id,
        actor=actors.of_user(user.id),
        target=actors.of_user(user.id),
        details={"kind": factor.kind},
        commit=False,
    )
    factors.changed(user, domain, "removed", factor.kind)
    response = make_response(redirect(url_for(".settings"), 303))
    amr = _amr(domain)
    _rotate(response, user, domain, amr)
    return response
