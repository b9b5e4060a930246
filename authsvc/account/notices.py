"""Short notices to the account's address when something about its security changes.

A password changed or reset, the address changed (to the old address), a
second factor added or removed, every second factor reset by an administrator
(authsvc.admin.mfa), a sign-in from a browser not seen before
(authsvc.account.devices). Each is queued in the transaction of the change, so
it goes only if the change is kept; an instance that cannot mail sends none.
The second factors' pages announce their changes (authsvc.auth.mfa.factors'
``factor_changed``), which ``init_app`` connects here. docs/account.md#notices.
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_babel import lazy_gettext as _l

from authsvc.account import links
from authsvc.auth.mfa import factors
from authsvc.core.models import Domain, User
from authsvc.mail import messages as mail
from authsvc.web import i18n

ACCOUNT_PATH = "/auth/account"
FORGOT_PATH = "/auth/password/forgot"
# How a kind of factor is named in a notice.
FACTOR_NAMES = {"totp": _l("An authenticator app"), "webauthn": _l("A passkey or security key")}


def init_app(app: Flask) -> None:
    factors.factor_changed.connect(_factor_changed)  # once: blinker keeps one connection per receiver


def _queue(
    domain: Domain, user: User, to: str, template: str, subject: Any, *, by_user: bool = True, **context: Any
) -> None:
    if mail.available():
        # The account's language; else the page's that made the change, when the user made it (authsvc.web.i18n).
        language = i18n.for_message(user.locale, domain, from_page=by_user)
        origin = links.origin(domain)
        mail.queue(
            domain,
            to,
            template,
            subject,
            language,
            account_link=f"{origin}{ACCOUNT_PATH}",
            reset_link=f"{origin}{FORGOT_PATH}",
            **context,
        )


def password_changed(domain: Domain, user: User, *, others_ended: bool) -> None:
    """The password of ``user`` was changed (on the account page: ``others_ended``) or reset (every session ended)."""
    origin = links.origin(domain)
    _queue(
        domain,
        user,
        user.email,
        "password_changed",
        _l("Your password was changed"),
        link=f"{origin}{FORGOT_PATH}",
        others_ended=others_ended,
    )


def email_changed(domain: Domain, user: User, old: str, new: str) -> None:
    """To the address that was the account's: it no longer is, ``new`` is."""
    _queue(domain, user, old, "email_changed", _l("Your e-mail address was changed"), old=old, new=new)


def factor_changed(domain: Domain, user: User, change: str, kind: str) -> None:
    subject = _l("A second factor was added") if change == "added" else _l("A second factor was removed")
    factor = FACTOR_NAMES.get(kind, _l("A second factor"))
    _queue(domain, user, user.email, "factor_changed", subject, change=change, factor=factor)


def factors_reset(domain: Domain, user: User) -> None:
    """An administrator removed every second factor of ``user``, and their sessions ended."""
    _queue(domain, user, user.email, "factors_reset", _l("Your second factors were reset"), by_user=False)


def new_device(domain: Domain, user: User, browser: str, address: str | None, when: int) -> None:
    """A sign-in from a browser not seen before; ``when`` in Unix seconds (the message writes it in its language)."""
    _queue(
        domain,
        user,
        user.email,
        "new_device",
        _l("A sign-in from a new device"),
        browser=browser,
        address=address or _l("an unknown address"),
        when=when,
    )


def _factor_changed(app: Flask, user: User, domain: Domain, change: str, kind: str) -> None:
    factor_changed(domain, user, change, kind)
