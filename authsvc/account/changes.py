"""What a signed-in person changes about their own account, for the account page and its API alike.

Each verb checks, changes, audits and queues its notice in the caller's
transaction, and raises ``Refused`` (what to tell the person) instead of
changing anything. Whether the sign-in is recent enough (authsvc.auth.reauth)
and the form's CSRF token are the surfaces' to check. docs/account.md.
"""

from __future__ import annotations

from flask import Response
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from sqlalchemy import or_, select

from authsvc.account import links, notices
from authsvc.auth import lockouts, sessions, signin
from authsvc.auth.session_record import Listed
from authsvc.core import actors, audit, security, validation
from authsvc.core.database import db
from authsvc.core.models import AuditRecord, Domain, LdapAccount, User
from authsvc.core.settings import settings
from authsvc.mail import messages as mail
from authsvc.web import i18n

EMAIL_CHANGE = links.EMAIL_CHANGE
CHANGE_PATH = "/auth/account/email/confirm"
NAME_LENGTH = 200
# How many of the account's audit records its page shows.
EVENTS_SHOWN = 20


class Refused(Exception):
    """A change that was not made; ``error`` names why for the API, the message says it to a person."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def rename(user: User, domain: Domain, name: str) -> None:
    name = " ".join(name.split())
    if not name or len(name) > NAME_LENGTH or not validation.storable_text(name):
        raise Refused("invalid_name", _("Enter a name of 1 to %(length)s characters.", length=NAME_LENGTH))
    if name == user.name:
        return
    before, user.name = user.name, name
    _audit("user.name_changed", user, domain, {"before": before, "after": name})


def _managed_elsewhere(user: User) -> bool:
    """Whether another system owns the account's address: SCIM provisioning or an LDAP directory."""
    if user.provisioned_by:
        return True
    return db.session.scalar(select(LdapAccount.id).where(LdapAccount.user_id == user.id).limit(1)) is not None


def ask_email_change(user: User, domain: Domain, email: str) -> str:
    """Send a link to ``email``; the account's address changes only when it is followed (``confirm_email_change``).

    Nothing here says whether ``email`` is another account's (no enumeration):
    that is checked when the link is followed, by whoever owns that address.
    Returns the normalised address.
    """
    try:
        new = validation.email(email)
    except validation.Invalid:
        raise Refused("invalid_email", _("Enter a valid e-mail address.")) from None
    if _managed_elsewhere(user):
        raise Refused("managed_elsewhere", _("Your organisation manages this account's address; ask it to change it."))
    if new == user.email:
        raise Refused("invalid_email", _("That is already your account's address."))
    if not mail.available():
        raise Refused("unavailable", _("This service cannot send e-mail, so it cannot confirm a new address."))
    # One pending change at a time: the newest link is the only one that works.
    links.spend_all(user.id, EMAIL_CHANGE)
    secret = links.issue(user.id, new, EMAIL_CHANGE, settings().verify_ttl)
    days = max(1, settings().verify_ttl // 86400)
    link = f"{links.origin(domain)}{CHANGE_PATH}?token={secret}"
    language = i18n.for_message(user.locale, domain, from_page=True)
    subject = _l("Confirm your new e-mail address")
    mail.queue(domain, new, "email_change", subject, language, link=link, days=days, email=new)
    _audit("user.email_change_requested", user, domain, {"email": new})
    return new


def pending_email(user: User) -> str | None:
    """The address a change waits to be confirmed at, if any."""
    found = db.session.scalars(
        select(links.AccountLink)
        .where(links.AccountLink.user_id == user.id, links.AccountLink.purpose == EMAIL_CHANGE)
        .order_by(links.AccountLink.id.desc())
        .limit(1)
    ).first()
    return found.email if found is not None and links.find_valid(found) else None


def confirm_email_change(link: links.AccountLink, domain: Domain) -> User:
    """Follow a change's link: the address becomes the account's, verified (its owner followed the link);
    the old address is told. Raises ``Refused`` when the link no longer works or the address became another
    account's meanwhile."""
    user = db.session.get(User, link.user_id)
    if user is None or user.domain_id != domain.id or user.disabled or _managed_elsewhere(user):
        raise Refused("expired", _("This link no longer works."))
    taken = signin.find_user(domain, link.email)
    if taken is not None and taken.id != user.id:
        raise Refused("email_in_use", f"{link.email} is already another account's address here.")
    if not links.spend(link):
        raise Refused("expired", _("This link no longer works."))
    links.spend_all(user.id, EMAIL_CHANGE)
    old, user.email, user.email_verified = user.email, link.email, True
    # Links sent to the old address (a reset, a verification) no longer reach its owner: void them.
    links.spend_all(user.id, links.PASSWORD_RESET)
    links.spend_all(user.id, links.EMAIL_VERIFY)
    _audit("user.email_changed", user, domain, {"before": old, "after": user.email})
    notices.email_changed(domain, user, old, user.email)
    return user


def change_password(response: Response, user: User, domain: Domain, current: str, new: str, confirm: str) -> int:
    """Set a new password, given the current one: every other session ends and every token of the user is
    revoked (their refresh tokens with them); this browser gets a new session of the same sign-in. Commits;
    returns how many tokens were revoked."""
    if not user.password_hash:
        raise Refused("no_password", _("Your account has no password here: you sign in through your organisation."))
    lockouts.refuse_if_locked_out(domain, user.email)
    if not user.check_password(current):
        lockouts.note_failure(domain, user.email, user)
        signin.refused(domain, user, "invalid_credentials", "account_page")
        raise Refused("invalid_password", _("The current password is incorrect."))
    if new != confirm:
        raise Refused("invalid_password", _("The new passwords differ."))
    try:
        validation.password(new)
    except validation.Invalid as exc:
        raise Refused("invalid_password", i18n.sentence(str(exc))) from None
    lockouts.forget_failures(domain, user.email)
    revoked = sessions.change_password(user, new, actor=actors.of_user(user.id))
    _audit("user.password_changed", user, domain, {"revoked_tokens": revoked, "via": "account_page"})
    notices.password_changed(domain, user, others_ended=True)
    sessions.keep_only_this(response, user, domain)
    return revoked


def public_id(listed: Listed) -> str:
    """A session's name on the account page and in its API: neither its id nor its sid (ID tokens' name)."""
    return security.digest(f"account-page:{listed.digest}")[:24]


def end_session(user: User, domain: Domain, session_id: str) -> bool:
    """End the user's session named ``session_id`` (``public_id``); False when there is no such live session."""
    found = next((listed for listed in sessions.live_sessions(user) if public_id(listed) == session_id), None)
    if found is None:
        return False
    sessions.end_named_sessions([found.digest])
    _audit("session.ended", user, domain, {"session": session_id, "via": "account"})
    return True


def end_other_sessions(response: Response | None, user: User, domain: Domain) -> None:
    """End every session of the user but the request's (every one, for a caller without a session: a token).
    Commits."""
    _audit("session.others_ended", user, domain, {"via": "account"})
    if response is not None and sessions.current_session(domain) is not None:
        sessions.keep_only_this(response, user, domain)
    else:
        sessions.invalidate_sessions(user)
        db.session.commit()


def security_events(user: User, domain: Domain) -> list[AuditRecord]:
    """The account's recent audit records: what it did and what was done to it, newest first."""
    name = actors.of_user(user.id)
    return list(
        db.session.scalars(
            select(AuditRecord)
            .where(AuditRecord.domain_id == domain.id, or_(AuditRecord.actor == name, AuditRecord.target == name))
            .order_by(AuditRecord.id.desc())
            .limit(EVENTS_SHOWN)
        )
    )


def _audit(event: str, user: User, domain: Domain, details: dict[str, object]) -> None:
    audit.record(
        event,
        domain_id=domain.id,
        actor=actors.of_user(user.id),
        target=actors.of_user(user.id),
        details=details,
        commit=False,
    )
