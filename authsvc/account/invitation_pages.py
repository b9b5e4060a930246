"""An invitation's pages: the link (/auth/invitation?token=...), then a password or a passkey, then signed in.

As with a reset, the secret leaves the address bar before anything is shown
(into the signed session cookie; ``Referrer-Policy: no-referrer``). The page
offers two ways in: a password (the service's rules), which makes the account
and signs the person in (or asks the second factor the domain's policy
requires), or a passkey: the account is made without a password and the
browser goes on to register the passkey (authsvc.auth.mfa's passkey page, a
fresh sign-in). An invitation already accepted, expired or revoked is a page
saying so, and nothing is made.
"""

from __future__ import annotations

from flask import Response, make_response, redirect, request, session, url_for
from flask_babel import gettext as _

from authsvc.account import invitations
from authsvc.account.blueprint import bp
from authsvc.account.forms import ConfirmForm, PasswordForm
from authsvc.account.invitations import Invitation
from authsvc.auth import sessions
from authsvc.auth.mfa import factors
from authsvc.auth.mfa.views import challenge
from authsvc.core import actors, audit, validation
from authsvc.core.database import db
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import Domain, User
from authsvc.core.tenancy import current_domain
from authsvc.web import i18n
from authsvc.web.pages import page

SECRET_KEY = "authsvc_invitation"


def _message(title: str, message: str, status: int = 200) -> Response:
    response = page("message.html", status, title=title, message=message, link=url_for("auth.login_page"))
    return uncached(response, referrer_policy=NO_REFERRER)


def _gone() -> Response:
    return _message(
        _("This invitation does not work"),
        _(
            "It was already accepted, has expired or was withdrawn. If you have not joined yet, ask whoever invited "
            "you to send a new one."
        ),
        400,
    )


def _invitation(domain: Domain) -> Invitation | None:
    found = invitations.find(session.get(SECRET_KEY))
    return found if found is not None and found.domain_id == domain.id else None


def _page(domain: Domain, invitation: Invitation, status: int = 200, error: str | None = None) -> Response:
    response = page(
        "invitation.html",
        status,
        domain=domain,
        invitation=invitation,
        form=PasswordForm(formdata=None),
        passkey_form=ConfirmForm(formdata=None),
        error=error,
    )
    return uncached(response, referrer_policy=NO_REFERRER)


@bp.get("/invitation")
def invitation() -> Response:
    """With ``?token=``: keep the secret in the session and come back without it; without: the page."""
    secret = request.args.get("token")
    if secret is not None:
        session[SECRET_KEY] = secret[:200]
        return uncached(make_response(redirect(url_for("account.invitation"), 303)), referrer_policy=NO_REFERRER)
    domain = current_domain()
    found = _invitation(domain)
    return _gone() if found is None else _page(domain, found)


def _password_refusal(form: PasswordForm) -> str | None:
    if not form.validate_on_submit():
        if form.csrf_token.errors:
            return _("The form expired. Please try again.")
        return str((form.password.errors or form.confirm.errors or [_("Enter a password twice.")])[0])
    try:
        validation.password(form.password.data)
    except validation.Invalid as exc:
        return i18n.sentence(str(exc))
    return None


def _accepted(domain: Domain, invitation: Invitation, password: str | None) -> User | None:
    """The account the invitation makes, committed with its audit records; None if it cannot be made."""
    invitation_id = invitation.id
    user = invitations.accept(invitation, password)
    if user is None:
        db.session.rollback()
        return None
    actor = actors.of_user(user.id)
    details = {"invitation": invitation_id, "with": "password" if password is not None else "passkey"}
    audit.record("invitation.accepted", domain_id=domain.id, actor=actor, target=actor, details=details, commit=False)
    audit.record(
        "user.created", domain_id=domain.id, actor=actor, target=actor, details={"after": user.as_json()}, commit=False
    )
    db.session.commit()
    session.pop(SECRET_KEY, None)
    return user


@bp.post("/invitation")
def accept_with_password() -> Response:
    domain = current_domain()
    found = _invitation(domain)
    if found is None:
        return _gone()
    form = PasswordForm()
    error = _password_refusal(form)
    if error:
        return _page(domain, found, 400, error)
    user = _accepted(domain, found, form.password.data)
    if user is None:
        return _taken()
    if factors.required_at_sign_in(user, domain):
        return challenge(user, domain, "", "invitation", html=True)
    response = make_response(redirect(url_for("auth.login_page"), 303))
    uncached(response, referrer_policy=NO_REFERRER)
    sessions.start_session(response, user, domain)
    return response


@bp.post("/invitation/passkey")
def accept_with_passkey() -> Response:
    """The account without a password, signed in, on its way to register its passkey."""
    domain = current_domain()
    found = _invitation(domain)
    if found is None:
        return _gone()
    if not ConfirmForm().validate_on_submit():
        return _page(domain, found, 400, _("The form expired. Please try again."))
    user = _accepted(domain, found, None)
    if user is None:
        return _taken()
    response = make_response(redirect(url_for("mfa_settings.add_passkey"), 303))
    uncached(response, referrer_policy=NO_REFERRER)
    sessions.start_session(response, user, domain, amr=["email"])
    return response


def _taken() -> Response:
    return _message(
        _("This invitation does not work"),
        _(
            "It was accepted a moment ago, or an account with this address exists already. Sign in, or ask for a "
            "new password if you need one."
        ),
        409,
    )
