"""The end of a token: revoked (by token, family, user, application or domain), deleted, purged.

Every revocation goes through ``_revoke``, so that a revoked row also becomes
purgeable at once. Nothing here commits: the caller's audit record of what it
revoked goes in the same transaction. Callers: the revocation endpoint
(authsvc.oauth.revocation_introspection), the refresh grant's reuse detection
(authsvc.tokens.refresh), a replayed code (authsvc.tokens.spent_codes), sign-out
and the end of a user's sessions (authsvc.auth), an approval withdrawn and the
FAPI 2.0 switch (authsvc.oauth), the deletion of an application, a user or a
domain, and ``tokens purge`` (authsvc.cli.tokens).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, delete, or_, select, update

from authsvc.core.database import db, now, rows_affected
from authsvc.core.models import SpentCode, Token


def _revoke(*conditions: ColumnElement[bool]) -> int:
    """Revoke every live token that meets ``conditions``; return how many there were."""
    moment = now()
    result = db.session.execute(
        update(Token).where(*conditions, Token.revoked_at.is_(None)).values(revoked_at=moment, purgeable_at=moment)
    )
    return rows_affected(result)


def revoke_token(token_id: int) -> int:
    """Revoke the row ``token_id`` (its access token and the refresh token issued with it)."""
    return _revoke(Token.id == token_id)


def revoke_family(family: str) -> int:
    """Revoke every token of ``family`` (one authorisation grant); return how many were live."""
    return _revoke(Token.family == family)


def revoke_of_user(user_id: int, application_id: int | None = None) -> int:
    """Revoke every token of ``user_id`` (only those of ``application_id`` when given)."""
    if application_id is None:
        return _revoke(Token.user_id == user_id)
    return _revoke(Token.user_id == user_id, Token.application_id == application_id)


def revoke_unbound_of(applications: Select[Any]) -> int:
    """Revoke the tokens of ``applications`` (ids) that FAPI 2.0 would not have issued (authsvc.oauth.profile).

    Every token not DPoP-bound, and every token of a grant other than client credentials.
    """
    return _revoke(
        Token.application_id.in_(applications),
        or_(Token.dpop_jkt.is_(None), Token.grant_type != "client_credentials"),
    )


def delete_of_application(application_id: int) -> int:
    """Revoke, then delete, the tokens of an application being deleted; how many were live."""
    live = _revoke(Token.application_id == application_id)
    db.session.execute(delete(Token).where(Token.application_id == application_id))
    return live


def delete_of_users(users: ColumnElement[int] | int, applications: ColumnElement[int] | None = None) -> None:
    """Delete the tokens of a user (an id) or of users (a subquery), and of ``applications`` when given."""
    of_users = Token.user_id == users if isinstance(users, int) else Token.user_id.in_(users)
    condition = of_users if applications is None else or_(of_users, Token.application_id.in_(applications))
    db.session.execute(delete(Token).where(condition))


def purge_batch(before: int, limit: int) -> tuple[int, int]:
    """Delete up to ``limit`` rows purgeable before ``before``; return (expired, revoked) counts.

    Finds them through the index on ``purgeable_at`` and deletes by primary
    key. Rows another transaction holds locked are skipped (PostgreSQL), so
    a purge never waits on live traffic.
    """
    rows = db.session.execute(
        select(Token.id, Token.revoked_at)
        .where(Token.purgeable_at < before)
        .order_by(Token.purgeable_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    if not rows:
        return 0, 0
    db.session.execute(delete(Token).where(Token.id.in_([row.id for row in rows])))
    revoked = sum(1 for row in rows if row.revoked_at is not None)
    return len(rows) - revoked, revoked


def purge_spent_codes(before: int) -> int:
    """Delete the spent codes whose TTL ended before ``before``: no such code can be presented any more."""
    return rows_affected(db.session.execute(delete(SpentCode).where(SpentCode.expires_at < before)))
