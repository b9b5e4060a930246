"""The applications connected to a user's account, and disconnecting one.

An application is connected while the user's approval of it stands (a
``Consent``, for an application that asks) or while it holds a live token of
the user (every application, asked or not). One home for the account page and
its API (authsvc.account) and for /auth/oauth/authorized_applications (authsvc.oauth),
whose JSON contract lists the approvals only (docs/api.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import delete, select

from authsvc.core import actors, audit
from authsvc.core.database import db, now, rows_affected
from authsvc.core.models import Application, Consent, Domain, Token, User
from authsvc.tokens import revocation


@dataclass
class Connection:
    """An application connected to the user's account: what it may do, since when, and how."""

    client_id: str
    name: str
    scopes: list[str] = field(default_factory=list)
    # When the user approved it (None: it never asked), and when it was first given a token still live.
    approved_at: int | None = None
    since: int | None = None


def approvals(user: User) -> list[Consent]:
    """The user's approvals, oldest first (/auth/oauth/authorized_applications's list)."""
    return list(db.session.scalars(select(Consent).where(Consent.user_id == user.id).order_by(Consent.id)))


def connections(user: User) -> list[Connection]:
    """Every application connected to ``user``'s account, by name."""
    found: dict[int, Connection] = {}
    for consent in approvals(user):
        app = consent.application
        found[app.id] = Connection(app.client_id, app.name, consent.scopes.split(), approved_at=consent.created_at)
    live = db.session.execute(
        select(Application.id, Application.client_id, Application.name, Token.scope, Token.issued_at)
        .join(Token, Token.application_id == Application.id)
        .where(Token.user_id == user.id, Token.revoked_at.is_(None), Token.purgeable_at > now())
        .order_by(Token.issued_at)
    )
    for application_id, client_id, name, scope, issued_at in live:
        connection = found.setdefault(application_id, Connection(client_id, name))
        connection.scopes = list(dict.fromkeys([*connection.scopes, *scope.split()]))
        connection.since = connection.since or issued_at
    return sorted(found.values(), key=lambda c: (c.name.lower(), c.client_id))


class NotConnected(Exception):
    """No such application here, or it holds no approval or live token of the user."""


def disconnect(user: User, domain: Domain, client_id: str, actor: str) -> int:
    """Withdraw ``user``'s approval of the application and revoke its tokens of the user; how many were live.

    Raises ``NotConnected`` when there was nothing to withdraw. Audited; the caller commits.
    """
    # A client_id with control characters (NUL, which PostgreSQL refuses) is simply unknown.
    if not client_id.isascii() or not client_id.isprintable() or len(client_id) > 64:
        raise NotConnected(client_id)
    application = db.session.scalar(
        select(Application).where(Application.client_id == client_id, Application.domain_id == domain.id)
    )
    if application is None:
        raise NotConnected(client_id)
    removed = rows_affected(
        db.session.execute(delete(Consent).where(Consent.user_id == user.id, Consent.application_id == application.id))
    )
    revoked = revocation.revoke_of_user(user.id, application.id)
    if revoked:
        audit.record(
            "token.revoked",
            domain_id=domain.id,
            actor=actor,
            target=actors.of_client(client_id),
            details={"count": revoked, "via": "approval_withdrawn"},
            commit=False,
        )
    if not removed and not revoked:
        raise NotConnected(client_id)
    if removed:
        audit.record(
            "consent.withdrawn",
            domain_id=domain.id,
            actor=actor,
            target=actors.of_user(user.id),
            details={"client_id": client_id},
            commit=False,
        )
    return revoked
