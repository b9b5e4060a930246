"""A refresh token's writes besides its successor's: kept (no rotation), and judged when presented again.

The successor's write claims the refresh token it spends (authsvc.tokens.rows);
what the refresh grant (authsvc.oauth.refresh_grant) asks besides is here: a
spent token presented again inside ``AUTHSVC_REFRESH_REUSE_GRACE`` is refused
and its family kept (a retry, or two tabs racing); later, the family is revoked
(RFC 9700 4.14). Under FAPI 2.0 the refresh token does not rotate: it is kept,
its idle time starting again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

import sqlalchemy.exc
from sqlalchemy import update

from authsvc.core import actors, audit
from authsvc.core.database import db, now, rows_affected
from authsvc.core.models import Token
from authsvc.core.settings import settings
from authsvc.tokens import revocation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reuse:
    """A spent refresh token presented again: whether it fell within the grace, and how many tokens it cost."""

    within_grace: bool
    revoked: int


def judge_reuse(token: Token) -> Reuse | None:
    """If ``token`` was spent, judge its reuse (its family revoked outside the grace), recorded and committed.

    None when it was not spent: nothing is written.
    """
    if token.refreshed_at is None:
        return None
    within_grace = now() - token.refreshed_at <= settings().refresh_reuse_grace
    revoked = 0 if within_grace else revocation.revoke_family(token.family)
    audit.record(
        "refresh_token.reused",
        domain_id=token.application.domain_id,
        actor=actors.of_client(token.application.client_id),
        target=f"token:{token.id}",
        details={"within_grace": within_grace, "revoked": revoked},
        commit=False,
    )
    db.session.commit()
    if not within_grace:
        log.warning("spent refresh token reused; revoked %d token(s) of its family", revoked)
    return Reuse(within_grace, revoked)


def judge_lost_claim(token: Token) -> None:
    """Another exchange claimed ``token`` since it was read (nothing was written): judged as a reuse found at
    the read is (a race between two tabs falls within the grace)."""
    try:
        db.session.refresh(token)  # as the claim found it
    except sqlalchemy.exc.InvalidRequestError:
        return  # gone with its application meanwhile
    judge_reuse(token)


def keep(token: Token) -> bool:
    """FAPI 2.0 5.3.2.1 item 9: no rotation. ``token`` stays the client's, its idle time starting again;
    False (nothing written, the session rolled back) when it was revoked meanwhile."""
    moment = now()
    idle = settings().refresh_idle_ttl
    # A refresh token has an end: the grant refused one without.
    grant_end = cast(int, token.grant_expires_at or token.refresh_expires_at)
    expires_at = min(grant_end, moment + idle) if idle > 0 else grant_end
    kept = rows_affected(
        db.session.execute(
            update(Token)
            .where(Token.id == token.id, Token.revoked_at.is_(None))
            .values(refresh_expires_at=expires_at, purgeable_at=max(token.issued_at + token.expires_in, expires_at))
        )
    )
    if kept != 1:
        db.session.rollback()
        return False
    return True
