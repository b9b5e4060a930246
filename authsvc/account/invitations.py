"""Invitations: an admin asks a person, by e-mail, to join a domain; the person's link makes the account.

An invitation names the address, the person's name and the role they get
(``user``, ``support`` or ``admin``). Its link carries a random secret, of
which only the digest is kept; it works once, until ``expires_at``
(``AUTHSVC_INVITATION_TTL``), unless revoked. A resend makes a new secret (the
old link stops working) and a new expiry. Accepting is one conditional UPDATE,
so that the link makes one account even when followed twice at once, and the
account is made in the same transaction. The address is verified by the
acceptance: the link went there. The pages are ``invitation_pages``; the
admin rules (who may invite, the audit of each change) are authsvc.admin's.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from flask_babel import lazy_gettext as _l
from sqlalchemy import BigInteger, ForeignKey, String, func, select, update
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.account import links
from authsvc.core import clock, security
from authsvc.core.database import Model, db, rows_affected
from authsvc.core.models import Domain, User
from authsvc.core.settings import settings
from authsvc.mail import messages as mail
from authsvc.web import i18n

PATH = "/auth/invitation"
ROLES = ("user", "support", "admin")


class Invitation(Model):
    __tablename__ = "invitation"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    email: Mapped[str] = mapped_column(String(320))
    name: Mapped[str] = mapped_column(String(200), default="")
    role: Mapped[str] = mapped_column(String(10), default="user")
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created_by: Mapped[str] = mapped_column(String(120))
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger)
    accepted_at: Mapped[int | None] = mapped_column(BigInteger)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger)
    # The account the acceptance made.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id", ondelete="SET NULL"))

    @property
    def state(self) -> str:
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= clock.now() else "pending"

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "domain": str(self.domain_id),
            "email": self.email,
            "name": self.name,
            "role": self.role,
            "state": self.state,
            "created_by": self.created_by,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "accepted_at": self.accepted_at,
            "revoked_at": self.revoked_at,
            "user": str(self.user_id) if self.user_id is not None else None,
        }


@dataclass(frozen=True)
class Sent:
    """An invitation just made or sent again; ``link`` only when no mail can carry it (shown to the admin once)."""

    invitation: Invitation
    link: str | None


def pending(domain_id: int, email: str) -> Invitation | None:
    """The domain's invitation of ``email`` that can still be accepted, if any."""
    query = select(Invitation).where(
        Invitation.domain_id == domain_id,
        Invitation.email == email,
        Invitation.accepted_at.is_(None),
        Invitation.revoked_at.is_(None),
        Invitation.expires_at > clock.now(),
    )
    return db.session.scalars(query).first()


def invite(domain: Domain, email: str, name: str, role: str, created_by: str) -> Sent:
    """A new invitation and its message, in the caller's transaction."""
    moment = clock.now()
    invitation = Invitation(
        id=secrets.token_hex(8),
        domain_id=domain.id,
        email=email,
        name=name,
        role=role,
        digest="",
        created_by=created_by,
        created_at=moment,
        expires_at=moment,
    )
    db.session.add(invitation)
    return send(domain, invitation)


def send(domain: Domain, invitation: Invitation) -> Sent:
    """A new secret and expiry for ``invitation`` (the previous link stops working) and its message, queued
    in the caller's transaction; without mail, the link is handed back instead."""
    secret = security.new_secret()
    invitation.digest = security.digest(secret)
    invitation.expires_at = clock.now() + settings().invitation_ttl
    link = f"{links.origin(domain)}{PATH}?token={secret}"
    if not mail.available():
        return Sent(invitation, link)
    days = max(1, settings().invitation_ttl // 86400)
    # In the domain's language: the invitee has chosen none yet, and an admin's page is not theirs.
    subject = _l("You are invited to %(domain)s", domain=domain.name)
    language = i18n.for_message(None, domain)
    mail.queue(domain, invitation.email, "invitation", subject, language, link=link, days=days, name=invitation.name)
    return Sent(invitation, None)


def find(secret: str | None) -> Invitation | None:
    """The invitation whose secret this is and that can still be accepted, or None."""
    if not secret or len(secret) > 200:
        return None
    invitation = db.session.scalar(select(Invitation).where(Invitation.digest == security.digest(secret)))
    if invitation is None or invitation.state != "pending":
        return None
    return invitation


def accept(invitation: Invitation, password: str | None) -> User | None:
    """Claim ``invitation`` and make its account (verified address, its role; a password if given), not
    committed; None when another request claimed it first or the address became an account meanwhile."""
    taken = db.session.scalar(
        select(User.id).where(User.domain_id == invitation.domain_id, User.email == invitation.email)
    )
    if taken is not None:
        return None
    claimed = (
        update(Invitation)
        .where(
            Invitation.id == invitation.id,
            Invitation.digest == invitation.digest,
            Invitation.accepted_at.is_(None),
            Invitation.revoked_at.is_(None),
            Invitation.expires_at > clock.now(),
        )
        .values(accepted_at=clock.now())
        .execution_options(synchronize_session=False)
    )
    if rows_affected(db.session.execute(claimed)) != 1:
        return None
    user = User(
        domain_id=invitation.domain_id,
        email=invitation.email,
        name=invitation.name,
        email_verified=True,
        admin=invitation.role == "admin",
        support=invitation.role == "support",
    )
    if password is not None:
        user.set_password(password)
    db.session.add(user)
    db.session.flush()
    db.session.execute(
        update(Invitation)
        .where(Invitation.id == invitation.id)
        .values(user_id=user.id)
        .execution_options(synchronize_session=False)
    )
    db.session.refresh(invitation)
    return user


def revoke(invitation: Invitation) -> bool:
    """Void a pending invitation's link (not committed); False when it was not pending."""
    if invitation.state != "pending":
        return False
    invitation.revoked_at = clock.now()
    return True


def of_domain(domain_id: int) -> list[Invitation]:
    query = select(Invitation).where(Invitation.domain_id == domain_id).order_by(Invitation.created_at, Invitation.id)
    return list(db.session.scalars(query))


def count(domain_id: int) -> int:
    return int(db.session.scalar(select(func.count()).where(Invitation.domain_id == domain_id)) or 0)
