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

from authsvc.core.database import among, db, now, rows_affected
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


def purge_batch(after: int, before: int, limit: int) -> tuple[int, int, int]:
    """Delete up to ``limit`` tokens purgeable from ``after`` to before ``before``, earliest first.

    Returns (expired, revoked, last): the counts, and the latest ``purgeable_at``
    deleted (``after`` when none was), which the caller passes as the next
    batch's ``after``. One statement: the rows are found through the index on
    ``purgeable_at`` from ``after`` on, so a batch never walks the index
    entries of rows that earlier batches deleted (they stay until VACUUM),
    and deleted by primary key. Rows another transaction holds locked are
    skipped (PostgreSQL), so a purge never waits on live traffic. The caller
    commits, once per batch: no lock outlives its batch.
    """
    rows = _delete_batch(Token.id, Token.purgeable_at, after, before, limit, Token.revoked_at)
    revoked = sum(1 for row in rows if row.revoked_at is not None)
    return len(rows) - revoked, revoked, max((row.purgeable_at for row in rows), default=after)


def purge_spent_codes(after: int, before: int, limit: int) -> tuple[int, int]:
    """Delete up to ``limit`` spent codes that expired from ``after`` to before ``before``, earliest first.

    No such code can be presented any more. Returns (count, last): how many, and
    the latest ``expires_at`` deleted (``after`` when none was), the next batch's
    ``after``: one statement through the index on ``expires_at``, as
    ``purge_batch``. The caller commits, once per batch.
    """
    rows = _delete_batch(SpentCode.digest, SpentCode.expires_at, after, before, limit)
    return len(rows), max((row.expires_at for row in rows), default=after)


def _delete_batch(key: Any, moment: Any, after: int, before: int, limit: int, *also: Any) -> list[Any]:
    """Delete up to ``limit`` rows whose ``moment`` is from ``after`` to before ``before``, earliest first.

    One statement, found through ``moment``'s index and deleted by ``key``; rows another
    transaction holds locked are skipped. Returns each deleted row's ``moment`` and ``also``.
    """
    doomed = (
        select(key)
        .where(moment >= after, moment < before)
        .order_by(moment)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    table = key.class_
    return list(db.session.execute(delete(table).where(among(key, doomed)).returning(moment, *also)).all())
