"""Sign-up (/auth/signup), where a domain allows it: anyone (``open``) or addresses at listed e-mail domains
(``restricted``); off by default. docs/account.md, "Sign-up".

The answer never tells whether the address is taken: the request checks only
the form (and the domain's rule, which is about the address, not an account),
hashes the password, and queues the question in the outbox; the sender makes
the account off the request path (``answer_signup``). A new address gets an
account that cannot sign in yet (``signup_pending``) and a verification link;
an address that is an account's already gets a message saying so, and the
account is left as it is. Both are rate limited per client address and per
address, as the links sent on request are.
"""

from __future__ import annotations

import json

from flask import Flask, Response, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from authsvc.account import links, verification
from authsvc.account.blueprint import bp
from authsvc.account.forms import SignupForm
from authsvc.auth import signin
from authsvc.core import actors, audit, security, validation
from authsvc.core.database import db
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import Domain, User
from authsvc.core.policy import Rate, rate_limited
from authsvc.core.tenancy import current_domain
from authsvc.mail import messages as mail
from authsvc.outbox import queue, sender
from authsvc.outbox.models import OutboxItem
from authsvc.web import i18n
from authsvc.web.pages import page

REQUEST_KIND = "signup_request"


def init_app(app: Flask) -> None:
    """Answer sign-ups only where the answers can be mailed (an instance that cannot mail claims none)."""
    if mail.available(app):
        sender.handlers(app).register(REQUEST_KIND, answer_signup)


def available(domain: Domain) -> bool:
    """Whether the sign-in page offers sign-up: the domain allows it and mail can confirm the address."""
    return domain.signup_open and mail.available()


def _closed(status: int) -> Response:
    response = page(
        "message.html",
        status,
        title=_("Sign-up is closed"),
        message=_("Accounts here are made by invitation. Ask an administrator of this service."),
        link=url_for("auth.login_page"),
    )
    return uncached(response)


def _form(domain: Domain, form: SignupForm, status: int = 200, error: str | None = None) -> Response:
    allowed = domain.signup_email_domains.split() if domain.signup == "restricted" else []
    return uncached(page("signup.html", status, domain=domain, form=form, error=error, allowed=allowed))


@bp.get("/signup")
def signup() -> Response:
    domain = current_domain()
    if not available(domain):
        return _closed(404)
    return _form(domain, SignupForm())


def _refusal(domain: Domain, form: SignupForm) -> tuple[str | None, str]:
    """What is wrong with the form, else None and the address in its stored form."""
    if not form.validate_on_submit():
        if form.csrf_token.errors:
            return _("The form expired. Please try again."), ""
        errors = form.email.errors or form.password.errors or form.confirm.errors or form.name.errors
        return str((errors or [_("Fill in every field.")])[0]), ""
    try:
        email = validation.email(form.email.data)
        validation.password(form.password.data)
    except validation.Invalid as exc:
        return i18n.sentence(str(exc)), ""
    if not domain.signup_allows(email):
        allowed = ", ".join(domain.signup_email_domains.split())
        return _("Sign-up here is for addresses at %(allowed)s only.", allowed=allowed), ""
    return None, email


@bp.post("/signup")
@rate_limited(Rate.ACCOUNT_MAIL_ADDRESS, Rate.ACCOUNT_MAIL_RECIPIENT)
def signup_submit() -> Response:
    """The same answer, after the same work (a bcrypt hash, one row queued), whether or not the address is taken."""
    domain = current_domain()
    if not available(domain):
        return _closed(404)
    form = SignupForm()
    error, email = _refusal(domain, form)
    if error:
        return _form(domain, form, 400, error)
    question = {
        "email": email,
        "name": (form.name.data or "").strip(),
        "password_hash": security.hash_password(form.password.data),
        "origin": links.origin(domain),
        # The messages are written in the language of this page (authsvc.web.i18n).
        "locale": i18n.current(),
    }
    queue(REQUEST_KIND, json.dumps(question), domain_id=domain.id)
    db.session.commit()
    response = page(
        "message.html",
        title=_("Check your inbox"),
        message=_(
            "A message on its way to %(email)s says what to do next. Your account can be used once you "
            "follow the link in it.",
            email=email,
        ),
        link=url_for("auth.login_page"),
    )
    return uncached(response, referrer_policy=NO_REFERRER)


def answer_signup(item: OutboxItem) -> None:
    """The sender's half: a new account and its verification link, or a message to the address's owner."""
    question = json.loads(item.read())
    domain = db.session.get(Domain, item.domain_id)
    if domain is None or not domain.signup_allows(question["email"]):
        return  # sign-up was turned off (or narrowed) since
    origin = question["origin"]
    user = signin.find_user(domain, question["email"])
    if user is None:
        user = User(
            domain_id=domain.id,
            email=question["email"],
            name=question["name"],
            password_hash=question["password_hash"],
            email_verified=False,
            signup_pending=True,
        )
        db.session.add(user)
        db.session.flush()
        actor = actors.of_user(user.id)
        details = {"after": user.as_json(), "via": "signup"}
        audit.record("user.signed_up", domain_id=domain.id, actor=actor, target=actor, details=details, commit=False)
        verification.send_link(user, domain, origin, question.get("locale"))
    elif user.disabled or user.service_account:
        return
    elif user.signup_pending:
        # Signed up before and not confirmed yet: a new link (the first password stays).
        verification.send_link(user, domain, origin, question.get("locale"))
    else:
        audit.record("user.signup_refused", domain_id=domain.id, target=actors.of_user(user.id), commit=False)
        context = {"link": f"{origin}/auth/login", "forgot": f"{origin}/auth/password/forgot"}
        subject = _l("You already have an account at %(domain)s", domain=domain.name)
        language = i18n.for_message(user.locale or question.get("locale"), domain)
        mail.queue(domain, user.email, "signup_existing", subject, language, **context)
