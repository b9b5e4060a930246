"""A forgotten password: ask for a link (/auth/password/forgot), follow it, set a new password (/auth/password/reset).

Asking answers the same, after the same work, whether or not the address is
an account's: the request only queues the question in the outbox, and the
sender answers it off the request path (``answer_request``): a link to the
account's address, a note saying how to sign in to an account without a
local password (single sign-on, a directory), nothing for an unknown address.
The link's secret leaves the address bar before the form is shown: it moves
into the signed session cookie and the browser is sent to the bare URL, with
``Referrer-Policy: no-referrer`` on both. A new password ends every session
and token of the user, voids the other links and sends a notice; it signs
nobody in, so the next sign-in asks the second factor as any other does.
"""

from __future__ import annotations

import json

from flask import Flask, Response, make_response, redirect, request, session, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from sqlalchemy import func, select

from authsvc.account import links, notices
from authsvc.account.blueprint import bp
from authsvc.account.forms import ForgotForm, ResetForm
from authsvc.account.invitations import Invitation
from authsvc.auth import sessions, signin
from authsvc.core import actors, audit, validation
from authsvc.core.database import db
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import (
    Domain,
    ExternalIdentity,
    LdapAccount,
    LdapDirectory,
    MfaFactor,
    SsoProvider,
    User,
)
from authsvc.core.policy import Rate, rate_limited
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain
from authsvc.mail import messages as mail
from authsvc.outbox import queue, sender
from authsvc.outbox.models import OutboxItem
from authsvc.web import i18n
from authsvc.web.pages import page

REQUEST_KIND = "password_reset_request"
# Where the link's secret waits in the (signed, HTTP-only) session cookie between the link and the form.
SECRET_KEY = "authsvc_reset"
UNAVAILABLE = _l("Resetting a password by e-mail is not available here. Ask an administrator of this service.")


def init_app(app: Flask) -> None:
    """Answer the questions only where the answers can be sent (an instance that cannot mail claims none)."""
    if mail.available(app):
        sender.handlers(app).register(REQUEST_KIND, answer_request)
        sender.handlers(app).purgers.append(links.purge)


def _message(title: str, message: str, status: int = 200, link: str | None = None, link_text: str | None = None):
    response = page("message.html", status, title=title, message=message, link=link, link_text=link_text)
    return uncached(response, referrer_policy=NO_REFERRER)


@bp.get("/password/forgot")
def forgot() -> Response:
    domain = current_domain()
    if not mail.available():
        return _message(_("Forgotten password"), UNAVAILABLE, link=url_for("auth.login_page"))
    return page("password_forgot.html", domain=domain, form=ForgotForm())


@bp.post("/password/forgot")
@rate_limited(Rate.ACCOUNT_MAIL_ADDRESS, Rate.ACCOUNT_MAIL_RECIPIENT)
def forgot_submit() -> Response:
    """The same answer, after the same work (one row queued), for every address of the right form."""
    domain = current_domain()
    if not mail.available():
        return _message(_("Forgotten password"), UNAVAILABLE, 404, link=url_for("auth.login_page"))
    form = ForgotForm()
    if not form.validate_on_submit():
        error = _("The form expired. Please try again.") if form.csrf_token.errors else _("Enter your e-mail address.")
        return page("password_forgot.html", 400, domain=domain, form=form, error=error)
    try:
        email = validation.email(form.email.data)
    except validation.Invalid:
        return page("password_forgot.html", 400, domain=domain, form=form, error=_("Enter a valid e-mail address."))
    # The answer is written in the language of this page, unless the account chose one (authsvc.web.i18n).
    question = {"email": email, "origin": links.origin(domain), "locale": i18n.current()}
    queue(REQUEST_KIND, json.dumps(question), domain_id=domain.id)
    db.session.commit()
    return _message(
        _("Check your inbox"),
        _(
            "If %(email)s is the address of an account here, a message on its way there says what to do next. "
            "The link in it works once, for a short time.",
            email=email,
        ),
        link=url_for("auth.login_page"),
    )


def answer_request(item: OutboxItem) -> None:
    """The sender's half: the account's answer to a forgotten password, queued as a message (or nothing)."""
    question = json.loads(item.read())
    domain = db.session.get(Domain, item.domain_id)
    user = signin.find_user(domain, question["email"]) if domain is not None else None
    if domain is None or user is None or user.disabled or user.service_account:
        return
    locale = i18n.for_message(user.locale or question.get("locale"), domain)
    ways = [] if user.password_hash else _ways_to_sign_in(user)
    if not ways and not user.password_hash and not _joined_by_invitation(user):
        # Made by an admin, SCIM or a directory without a password: it waits for its single sign-on, and
        # a password set here would go around it.
        ways = [_l("Ask an administrator of this service how your account signs in")]
    if not ways:
        # A local password to reset, or an invitee who chose a passkey and left before registering one
        # (no way in at all): the link sets a password either way.
        secret = links.issue(user.id, user.email, links.PASSWORD_RESET, settings().reset_ttl)
        link = f"{question['origin']}{url_for_path('reset')}?token={secret}"
        minutes = settings().reset_ttl // 60
        mail.queue(domain, user.email, "password_reset", _l("Reset your password"), locale, link=link, minutes=minutes)
        return
    mail.queue(
        domain,
        user.email,
        "password_elsewhere",
        _l("How you sign in"),
        locale,
        ways=ways,
        link=f"{question['origin']}{url_for_path('login')}",
    )


def url_for_path(name: str) -> str:
    """The paths links point to (the sender has no request to build a URL from)."""
    return {"reset": "/auth/password/reset", "login": "/auth/login", "forgot": "/auth/password/forgot"}[name]


def _joined_by_invitation(user: User) -> bool:
    return db.session.scalar(select(Invitation.id).where(Invitation.user_id == user.id).limit(1)) is not None


def _ways_to_sign_in(user: User) -> list[str]:
    """How an account without a local password signs in: its providers, directories and passkeys (none: no way)."""
    providers = db.session.scalars(
        select(SsoProvider.name)
        .join(ExternalIdentity, ExternalIdentity.provider_id == SsoProvider.id)
        .where(ExternalIdentity.user_id == user.id)
    )
    directories = db.session.scalars(
        select(LdapDirectory.name)
        .join(LdapAccount, LdapAccount.directory_id == LdapDirectory.id)
        .where(LdapAccount.user_id == user.id)
    )
    passkeys = db.session.scalar(
        select(func.count())
        .select_from(MfaFactor)
        .where(MfaFactor.user_id == user.id, MfaFactor.kind == "webauthn", MfaFactor.confirmed.is_(True))
    )
    ways = [_l("Sign in with %(provider)s", provider=name) for name in providers]
    ways += [
        _l("Sign in with your password of %(directory)s (your organisation's directory)", directory=name)
        for name in directories
    ]
    ways += [_l("Sign in with your passkey (the sign-in page offers it)")] if passkeys else []
    return ways


@bp.get("/password/reset")
def reset() -> Response:
    """With ``?token=``: keep the secret in the session and come back without it; without: the form."""
    secret = request.args.get("token")
    if secret is not None:
        session[SECRET_KEY] = secret[:200]
        return uncached(make_response(redirect(url_for("account.reset"), 303)), referrer_policy=NO_REFERRER)
    if links.find(session.get(SECRET_KEY), links.PASSWORD_RESET) is None:
        return _expired()
    response = page("password_reset.html", domain=current_domain(), form=ResetForm())
    return uncached(response, referrer_policy=NO_REFERRER)


def _expired() -> Response:
    return _message(
        _("This link does not work"),
        _("The link has expired or was already used. Ask for a new one."),
        400,
        link=url_for("account.forgot"),
        link_text=_("Ask for a new link"),
    )


def _refusal(form: ResetForm) -> str | None:
    """What is wrong with the new password (the service's password rules), or None."""
    if not form.validate_on_submit():
        if form.csrf_token.errors:
            return _("The form expired. Please try again.")
        return str((form.password.errors or form.confirm.errors or [_("Enter the new password twice.")])[0])
    try:
        validation.password(form.password.data)
    except validation.Invalid as exc:
        return i18n.sentence(str(exc))
    return None


@bp.post("/password/reset")
def reset_submit() -> Response:
    domain = current_domain()
    link = links.find(session.get(SECRET_KEY), links.PASSWORD_RESET)
    if link is None:
        return _expired()
    form = ResetForm()
    error = _refusal(form)
    if error:
        response = page("password_reset.html", 400, domain=domain, form=form, error=error)
        return uncached(response, referrer_policy=NO_REFERRER)
    user = db.session.get(User, link.user_id)
    if user is None or user.domain_id != domain.id or user.disabled or not links.spend(link):
        db.session.rollback()
        return _expired()
    links.spend_all(user.id, links.PASSWORD_RESET)
    if link.email == user.email:
        # The link reached the address: it is confirmed, and a sign-up's account usable (with the new password).
        user.email_verified, user.signup_pending = True, False
    revoked = sessions.change_password(user, form.password.data, actor=actors.of_user(user.id))
    audit.record(
        "user.password_reset",
        domain_id=domain.id,
        actor=actors.of_user(user.id),
        target=actors.of_user(user.id),
        details={"revoked_tokens": revoked},
        commit=False,
    )
    notices.password_changed(domain, user, others_ended=False)
    db.session.commit()
    session.pop(SECRET_KEY, None)
    response = _message(
        _("Password changed"),
        _("Your new password is set, and every session of your account has ended. Sign in with it."),
        link=url_for("auth.login_page"),
        link_text=_("Sign in"),
    )
    return response
