"""Password sign-in: the one decision for /auth/signin, the sign-in page and the password grant."""

from __future__ import annotations

from sqlalchemy import select

from authsvc.auth import ldap_signin, lockouts, sessions
from authsvc.core import actors, audit, validation
from authsvc.core.database import db
from authsvc.core.errors import AddressUnconfirmed
from authsvc.core.models import Domain, User
from authsvc.web import metrics


def find_user(domain: Domain, email: str) -> User | None:
    return db.session.scalar(
        select(User).where(User.domain_id == domain.id, User.email == validation.account_name(email))
    )


def authenticate(domain: Domain, email: str, password: str, via: str) -> User | None:
    """The user of ``domain`` with this e-mail and password, else None.

    Unknown e-mail and wrong password cost the same bcrypt check and give the
    same answer, and count towards a lockout alike. While the account or the
    client address is locked out this raises ``lockouts.LockedOut``, before the
    password is looked at: the right password does not end a lockout. A
    disabled user with the right password is returned, so the caller can say so.
    An account without a local password, or an e-mail unknown here, is checked
    against the domain's LDAP directories (authsvc.auth.ldap_signin); one
    that cannot answer raises ``DirectoryUnavailable`` (503), which is not a failure.
    ``via`` names the entry point for the audit record and the metrics.
    """
    return _authenticate(domain, email, password, via)[0]


def _authenticate(domain: Domain, email: str, password: str, via: str) -> tuple[User | None, dict]:
    """``authenticate``, with what the success's audit record adds (the directory that said yes)."""
    lockouts.refuse_if_locked_out(domain, email)
    user = find_user(domain, email)
    directories = ldap_signin.directories_for(domain, user)
    if directories:
        outcome = ldap_signin.authenticate(directories, email, password, user)
        if outcome.deprovision is not None:
            sessions.end_everything(outcome.deprovision, "directory_deprovisioned", f"ldap:{outcome.directory}")
            db.session.commit()
        if outcome.user is None:
            refused(domain, user, outcome.reason, via, directory=outcome.directory)
            if outcome.reason != "conflict":
                lockouts.note_failure(domain, email, user)
            return None, {}
        lockouts.forget_failures(domain, email)
        return outcome.user, {"directory": outcome.directory, **outcome.details}
    if not (user.check_password(password) if user else User().check_password(password)):
        refused(domain, user, "invalid_credentials", via)
        lockouts.note_failure(domain, email, user)
        return None, {}
    lockouts.forget_failures(domain, email)
    return user, {}


def refused(domain: Domain, user: User | None, reason: str, via: str, directory: str | None = None) -> None:
    """Record a refused sign-in. An unknown e-mail is not written down: it may be a mistyped password."""
    metrics.SIGNIN_FAILURES.labels(via=via).inc()
    details = {"via": via, "reason": reason} | ({"directory": directory} if directory else {})
    audit.record(
        "signin.failed",
        domain_id=domain.id,
        target=actors.of_user(user.id) if user is not None else None,
        details=details,
    )


def sign_in(domain: Domain, email: str, password: str, via: str) -> User | None:
    """The one password sign-in decision, for /auth/signin and the sign-in page alike.

    None for an unknown e-mail, a wrong password and a disabled account: the
    caller answers all three the same way. The right password of an account made
    by sign-up whose address is not confirmed raises ``AddressUnconfirmed``: only
    who knows the password learns that the account exists.
    """
    user, extra = _authenticate(domain, email, password, via)
    if user is None:
        return None
    if user.disabled:
        refused(domain, user, "disabled", via, directory=extra.get("directory"))
        return None
    if user.signup_pending:
        refused(domain, user, "email_unverified", via)
        raise AddressUnconfirmed()
    audit.record("signin.succeeded", domain_id=domain.id, actor=actors.of_user(user.id), details={"via": via, **extra})
    return user
