"""A verified address: a link sent to it, followed by its owner, sets ``email_verified`` (the claim).

``send_link`` is called wherever an address becomes a user's without anyone
vouching for it (a changed address); the signed-in page offers a new link
(``resend``, rate limited). As with a reset, the secret leaves the address
bar before anything is shown, and the address is confirmed with a button
(POST), which a mail scanner that opens links does not press.
"""

from __future__ import annotations

from flask import Response, make_response, redirect, request, session, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from authsvc.account import links
from authsvc.account.blueprint import bp
from authsvc.account.forms import ConfirmForm
from authsvc.auth import sessions
from authsvc.core import actors, audit
from authsvc.core.database import db
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import Domain, User
from authsvc.core.policy import Rate, rate_limited
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain
from authsvc.mail import messages as mail
from authsvc.web import i18n
from authsvc.web.pages import page

SECRET_KEY = "authsvc_verify"
PATH = "/auth/email/verify"


def send_link(user: User, domain: Domain, origin: str | None = None, locale: str | None = None) -> bool:
    """Queue a verification link to ``user``'s address in the caller's transaction; False when no mail
    can be sent from here (the address stays unverified until an admin vouches for it). ``origin``: where
    the link points when there is no request to tell (the outbox's sender), else ``links.origin``; ``locale``:
    the language of the page that asked, when there is no request to tell (the account's own choice comes first)."""
    if not mail.available():
        return False
    secret = links.issue(user.id, user.email, links.EMAIL_VERIFY, settings().verify_ttl)
    days = max(1, settings().verify_ttl // 86400)
    link = f"{origin or links.origin(domain)}{PATH}?token={secret}"
    language = i18n.for_message(user.locale or locale, domain, from_page=True)
    subject = _l("Confirm your e-mail address")
    mail.queue(domain, user.email, "verify_email", subject, language, link=link, days=days)
    return True


def _message(title: str, message: str, status: int = 200, link: str | None = None, link_text: str | None = None):
    response = page("message.html", status, title=title, message=message, link=link, link_text=link_text)
    return uncached(response, referrer_policy=NO_REFERRER)


def _expired() -> Response:
    return _message(
        _("This link does not work"),
        _(
            "The link has expired, was already used, or is for an address that is no longer your account's. "
            "Sign in to ask for a new one."
        ),
        400,
        link=url_for("auth.login_page"),
    )


@bp.get("/email/verify")
def verify() -> Response:
    secret = request.args.get("token")
    if secret is not None:
        session[SECRET_KEY] = secret[:200]
        return uncached(make_response(redirect(url_for("account.verify"), 303)), referrer_policy=NO_REFERRER)
    link = links.find(session.get(SECRET_KEY), links.EMAIL_VERIFY)
    if link is None:
        return _expired()
    response = page("email_verify.html", domain=current_domain(), form=ConfirmForm(), email=link.email)
    return uncached(response, referrer_policy=NO_REFERRER)


@bp.post("/email/verify")
def verify_submit() -> Response:
    domain = current_domain()
    link = links.find(session.get(SECRET_KEY), links.EMAIL_VERIFY)
    if link is None:
        return _expired()
    form = ConfirmForm()
    if not form.validate_on_submit():
        return _message(_("The form expired"), _("Open the link in the message again."), 400)
    user = db.session.get(User, link.user_id)
    if user is None or user.domain_id != domain.id or user.email != link.email or not links.spend(link):
        db.session.rollback()
        return _expired()
    user.email_verified = True
    # A sign-up's account can be used from now on.
    user.signup_pending = False
    audit.record(
        "user.email_verified",
        domain_id=domain.id,
        actor=actors.of_user(user.id),
        target=actors.of_user(user.id),
        details={"email": user.email},
        commit=False,
    )
    db.session.commit()
    session.pop(SECRET_KEY, None)
    return _message(_("Address confirmed"), _("%(email)s is confirmed as your account's address.", email=user.email))


@bp.post("/email/verify/resend")
@rate_limited(Rate.ACCOUNT_MAIL_ADDRESS, Rate.ACCOUNT_MAIL_RECIPIENT)
def resend() -> Response:
    """A new link for the signed-in user's unverified address (the CSRF token of the signed-in page)."""
    domain = current_domain()
    user = sessions.session_user(domain)
    if user is None:
        return _message(_("Sign in first"), _("Sign in to ask for a new link."), 401, link=url_for("auth.login_page"))
    if not ConfirmForm().validate_on_submit():
        return _message(_("The form expired"), _("Go back, reload the page and try again."), 400)
    if user.email_verified:
        return _message(
            _("Already confirmed"),
            _("%(email)s is already confirmed.", email=user.email),
            link=url_for("auth.login_page"),
        )
    if not send_link(user, domain):
        return _message(_("Not available"), _("This service cannot send e-mail. Ask an administrator."), 404)
    db.session.commit()
    return _message(
        _("Check your inbox"),
        _("A new link is on its way to %(email)s.", email=user.email),
        link=url_for("auth.login_page"),
    )
