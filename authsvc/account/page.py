"""The account page (/auth/account): name, address, password, second factors, sessions, applications,
and the account's recent security events; and the link that confirms a new address.

Every form carries the page's CSRF token; every change is audited (authsvc.account.changes
does it). A new password or address needs a recent sign-in (authsvc.auth.reauth); ending a
session or disconnecting an application does not: they only take away. After a change the
browser comes back to the page (303) with ``?done=`` naming what was done, never a text
from the request. The second factors are managed on their own pages (/auth/mfa), linked
from here. docs/account.md.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import Response, make_response, redirect, request, session, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from authsvc.account import agents, changes, links
from authsvc.account.blueprint import bp
from authsvc.account.forms import ConfirmForm, EmailChangeForm, NameForm, PasswordChangeForm
from authsvc.auth import approvals, reauth, sessions
from authsvc.auth.mfa import factors
from authsvc.core import actors
from authsvc.core.database import db
from authsvc.core.errors import LockedOut, answer
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import Domain, User
from authsvc.core.policy import Rate, rate_limited
from authsvc.core.tenancy import current_domain
from authsvc.mail import messages as mail
from authsvc.web import i18n
from authsvc.web.pages import page

CHANGE_SECRET_KEY = "authsvc_email_change"
# What ``?done=`` may say.
DONE = {
    "name": _l("Your name was changed."),
    "email": _l("A link is on its way to the new address: your address changes when you follow it."),
    "password": _l("Your password was changed, and every other session ended."),
    "session": _l("The session ended."),
    "others": _l("Every other session ended."),
    "application": _l("The application was disconnected, and its tokens revoked."),
}
# What the security events list calls an audit event; others show by their name.
EVENTS = {
    "user.created": _l("Account created"),
    "signin.succeeded": _l("Signed in"),
    "signin.failed": _l("A sign-in failed"),
    "signin.mfa_passed": _l("Second factor accepted"),
    "user.password_changed": _l("Password changed"),
    "user.password_reset": _l("Password reset by e-mail"),
    "user.email_change_requested": _l("New address asked for"),
    "user.email_changed": _l(_("Address changed")),
    "user.email_verified": _l("Address confirmed"),
    "user.name_changed": _l("Name changed"),
    "mfa.enrolled": _l("Second factor added"),
    "mfa.factor_removed": _l("Second factor removed"),
    "mfa.recovery_codes_regenerated": _l("New recovery codes"),
    "session.ended": _l("A session ended"),
    "session.others_ended": _l("Every other session ended"),
    "token.revoked": _l("Tokens revoked"),
    "consent.withdrawn": _l("An application disconnected"),
}


def _signed_in(*, recently: bool = False) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    """The view, called with the session's user and the request's domain first; without a session, sign-in (303)
    and back here. ``recently``: a sign-in recent enough for a new address or password (authsvc.auth.reauth)."""

    def decorate(view: Callable[..., Response]) -> Callable[..., Response]:
        @wraps(view)
        def wrapped(**kwargs: Any) -> Response:
            domain = current_domain()
            user = sessions.session_user(domain)
            if user is None:
                here: dict[str, Any] = {"continue": request.full_path if request.query_string else request.path}
                return make_response(redirect(url_for("auth.login_page", **here), 303))
            if recently:
                stale = reauth.required(user, domain, url_for("account.account_page"))
                if stale is not None:
                    return stale
            return view(user, domain, **kwargs)

        return wrapped

    return decorate


def _back(done: str, anchor: str = "") -> Response:
    return uncached(make_response(redirect(url_for("account.account_page", done=done) + anchor, 303)))


def _session_rows(user: User) -> list[dict[str, object]]:
    current = sessions.current_digest()
    return [
        {
            "id": changes.public_id(listed),
            "browser": agents.describe(listed.record.agent),
            "address": listed.record.address or "unknown",
            "method": agents.method(listed.record.amr),
            "signed_in": listed.record.auth_time,
            "seen": listed.record.seen,
            "current": listed.digest == current,
        }
        for listed in sessions.live_sessions(user)
    ]


def _page(user: User, domain: Domain, status: int = 200, errors: dict[str, str] | None = None, **forms: object):
    context: dict[str, object] = {
        "name_form": NameForm(formdata=None, name=user.name),
        "email_form": EmailChangeForm(formdata=None),
        "password_form": PasswordChangeForm(formdata=None),
        "action_form": ConfirmForm(formdata=None),
        **forms,
    }
    response = page(
        "account.html",
        status,
        domain=domain,
        user=user,
        errors=errors or {},
        done=DONE.get(request.args.get("done", "")),
        pending=changes.pending_email(user),
        can_mail=mail.available(),
        factors=factors.confirmed_factors(user),
        sessions=_session_rows(user),
        applications=approvals.connections(user),
        events=[(record, EVENTS.get(record.event, record.event)) for record in changes.security_events(user, domain)],
        **context,
    )
    return uncached(response)


@bp.get("/account")
@_signed_in()
def account_page(user: User, domain: Domain) -> Response:
    return _page(user, domain)


@bp.get("/account/sessions")
@_signed_in()
def sessions_page(user: User, domain: Domain) -> Response:
    """The sessions alone (the account page shows them too)."""
    return uncached(
        page(
            "account_sessions.html",
            domain=domain,
            user=user,
            sessions=_session_rows(user),
            action_form=ConfirmForm(formdata=None),
        )
    )


def _refused(user: User, domain: Domain, section: str, message: str, **forms: object) -> Response:
    db.session.rollback()
    return _page(user, domain, 400, {section: message}, **forms)


EXPIRED_FORM = _l("The form expired. Reload the page and try again.")


@bp.post("/account/name")
@_signed_in()
def change_name(user: User, domain: Domain) -> Response:
    form = NameForm()
    if not form.validate_on_submit():
        return _refused(user, domain, "name", EXPIRED_FORM if form.csrf_token.errors else _("Enter your name."))
    try:
        changes.rename(user, domain, form.name.data)
    except changes.Refused as exc:
        return _refused(user, domain, "name", exc.message)
    db.session.commit()
    return _back("name")


@bp.post("/account/email")
@rate_limited(Rate.ACCOUNT_MAIL_ADDRESS, Rate.ACCOUNT_MAIL_RECIPIENT)
@_signed_in(recently=True)
def change_email(user: User, domain: Domain) -> Response:
    form = EmailChangeForm()
    if not form.validate_on_submit():
        message = EXPIRED_FORM if form.csrf_token.errors else _("Enter a valid e-mail address.")
        return _refused(user, domain, "email", message, email_form=form)
    try:
        changes.ask_email_change(user, domain, form.email.data)
    except changes.Refused as exc:
        return _refused(user, domain, "email", exc.message, email_form=form)
    db.session.commit()
    return _back("email")


@bp.post("/account/password")
@_signed_in(recently=True)
def change_password(user: User, domain: Domain) -> Response:
    form = PasswordChangeForm()
    if not form.validate_on_submit():
        return _refused(user, domain, "password", EXPIRED_FORM)
    response = _back("password")
    try:
        changes.change_password(
            response, user, domain, form.current.data or "", form.password.data or "", form.confirm.data or ""
        )
    except changes.Refused as exc:
        db.session.commit()  # the refused sign-in's audit record stays
        return _refused(user, domain, "password", exc.message)
    except LockedOut as exc:
        refused = answer(exc)
        failed = _refused(user, domain, "password", i18n.refusal(refused))
        failed.status_code = refused.status
        return failed
    return response


@bp.post("/account/sessions/<session_id>/end")
@_signed_in()
def end_session(user: User, domain: Domain, session_id: str) -> Response:
    if not ConfirmForm().validate_on_submit():
        return _refused(user, domain, "sessions", EXPIRED_FORM)
    if not changes.end_session(user, domain, session_id[:64]):
        return _refused(user, domain, "sessions", _("That session has already ended."))
    db.session.commit()
    return _back("session", "#sessions")


@bp.post("/account/sessions/end-others")
@_signed_in()
def end_other_sessions(user: User, domain: Domain) -> Response:
    if not ConfirmForm().validate_on_submit():
        return _refused(user, domain, "sessions", EXPIRED_FORM)
    response = _back("others", "#sessions")
    changes.end_other_sessions(response, user, domain)
    return response


@bp.post("/account/applications/<client_id>/disconnect")
@_signed_in()
def disconnect_application(user: User, domain: Domain, client_id: str) -> Response:
    if not ConfirmForm().validate_on_submit():
        return _refused(user, domain, "applications", EXPIRED_FORM)
    try:
        approvals.disconnect(user, domain, client_id, actors.of_user(user.id))
    except approvals.NotConnected:
        return _refused(user, domain, "applications", _("That application is not connected to your account."))
    db.session.commit()
    return _back("application", "#applications")


# Following the link sent to a new address: as a verification's, the secret leaves the address bar first,
# and a button (POST) confirms, which a mail scanner that opens links does not press.


def _message(title: str, message: str, status: int = 200) -> Response:
    response = page("message.html", status, title=title, message=message, link=url_for("account.account_page"))
    return uncached(response, referrer_policy=NO_REFERRER)


EXPIRED_LINK = _l("The link has expired or was already used. Ask for a new one on your account page.")


@bp.get("/account/email/confirm")
def confirm_email() -> Response:
    secret = request.args.get("token")
    if secret is not None:
        session[CHANGE_SECRET_KEY] = secret[:200]
        target = url_for("account.confirm_email")
        return uncached(make_response(redirect(target, 303)), referrer_policy=NO_REFERRER)
    link = links.find(session.get(CHANGE_SECRET_KEY), links.EMAIL_CHANGE)
    if link is None:
        return _message(_("This link does not work"), EXPIRED_LINK, 400)
    form = ConfirmForm()
    response = page(
        "email_verify.html",
        domain=current_domain(),
        form=form,
        email=link.email,
        action=url_for("account.confirm_email_submit"),
    )
    return uncached(response, referrer_policy=NO_REFERRER)


@bp.post("/account/email/confirm")
def confirm_email_submit() -> Response:
    domain = current_domain()
    link = links.find(session.get(CHANGE_SECRET_KEY), links.EMAIL_CHANGE)
    if link is None:
        return _message(_("This link does not work"), EXPIRED_LINK, 400)
    if not ConfirmForm().validate_on_submit():
        return _message(_("The form expired"), _("Open the link in the message again."), 400)
    try:
        user = changes.confirm_email_change(link, domain)
    except changes.Refused as exc:
        db.session.rollback()
        return _message(_("Not changed"), exc.message, 400)
    db.session.commit()
    session.pop(CHANGE_SECRET_KEY, None)
    return _message(_("Address changed"), _("%(email)s is now your account's address.", email=user.email))
