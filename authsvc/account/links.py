"""Single-use links sent by e-mail: a password reset, an address's verification.

A link carries a random secret; only its digest is stored, with what it is
for, whose it is, the address it was sent to and when it ends. Spending one
is one conditional UPDATE, so that a link works once even when opened twice
at the same moment.
"""

from __future__ import annotations

from flask import has_request_context, request
from sqlalchemy import BigInteger, ForeignKey, Integer, String, delete, select, update
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core import clock, security
from authsvc.core.database import Model, db, rows_affected
from authsvc.core.models import Domain
from authsvc.core.tenancy import host_name

PASSWORD_RESET = "password_reset"
EMAIL_VERIFY = "email_verify"
# A new address, confirmed at that address before it becomes the account's (authsvc.account.changes).
EMAIL_CHANGE = "email_change"


class AccountLink(Model):
    __tablename__ = "account_link"

    id: Mapped[int] = mapped_column(primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    purpose: Mapped[str] = mapped_column(String(20))
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    # The address the link was sent to: a verification counts only while it is still the user's.
    email: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger)
    used_at: Mapped[int | None] = mapped_column(Integer)


def issue(user_id: int, email: str, purpose: str, ttl: int) -> str:
    """A new link's secret (its digest joins the caller's transaction)."""
    secret = security.new_secret()
    moment = clock.now()
    db.session.add(
        AccountLink(
            digest=security.digest(secret),
            purpose=purpose,
            user_id=user_id,
            email=email,
            created_at=moment,
            expires_at=moment + ttl,
        )
    )
    return secret


def find(secret: str | None, purpose: str) -> AccountLink | None:
    """The unspent, unexpired link of ``purpose`` whose secret this is, or None."""
    if not secret or len(secret) > 200:
        return None
    link = db.session.scalar(select(AccountLink).where(AccountLink.digest == security.digest(secret)))
    if link is None or link.purpose != purpose or not find_valid(link):
        return None
    return link


def find_valid(link: AccountLink) -> bool:
    """Whether ``link`` can still be followed: not spent, not expired."""
    return link.used_at is None and link.expires_at > clock.now()


def spend(link: AccountLink) -> bool:
    """Mark ``link`` used; False when another request spent it first. The caller commits."""
    statement = (
        update(AccountLink)
        .where(AccountLink.id == link.id, AccountLink.used_at.is_(None))
        .values(used_at=clock.now())
        .execution_options(synchronize_session=False)
    )
    return rows_affected(db.session.execute(statement)) == 1


def spend_all(user_id: int, purpose: str) -> None:
    """Mark every unspent link of ``purpose`` of the user used (a reset done makes the others void)."""
    db.session.execute(
        update(AccountLink)
        .where(AccountLink.user_id == user_id, AccountLink.purpose == purpose, AccountLink.used_at.is_(None))
        .values(used_at=clock.now())
        .execution_options(synchronize_session=False)
    )


def purge() -> None:
    """Delete the links that expired a day ago or more (used or not: none can be followed any more)."""
    db.session.execute(delete(AccountLink).where(AccountLink.expires_at < clock.now() - 86400))
    db.session.commit()


def origin(domain: Domain) -> str:
    """Where a link to ``domain`` points: the domain's own host, never a Host header's other name.

    The request's scheme and port are kept when the request came to that host (a development
    server on :5000); a request that reached the domain by another name (the default domain)
    gets https and the domain's host, so that a forged Host header cannot receive a link.
    """
    if has_request_context() and host_name(request.host) == domain.host:
        return f"{request.scheme}://{request.host}"
    return f"https://{domain.host}"
