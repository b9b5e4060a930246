"""Authorisation codes already exchanged, kept in SQL so that a Redis failover cannot make one valid again.

Codes live in Redis, and Redis replicates asynchronously: a code claimed
just before its primary died may be back, unclaimed, on the promoted
replica. The exchange that spends a code also inserts the code's digest
here, in the transaction that saves its tokens; a second exchange of the
same code fails on the primary key and is refused as a replay (RFC 6749
4.1.2), whatever Redis says. docs/deployment.md, "High availability".
"""

from __future__ import annotations

from sqlalchemy import Integer, String, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core.database import Model, among, db


class SpentCode(Model):
    """A spent code's digest, the family its tokens joined, and when the row may go (the code's spent TTL)."""

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    family: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[int] = mapped_column(Integer, index=True)

    @staticmethod
    def purge_batch(after: int, before: int, limit: int) -> tuple[int, int]:
        """Delete up to ``limit`` rows that expired from ``after`` to before ``before``, earliest first.

        Returns (count, last): how many, and the latest ``expires_at`` deleted
        (``after`` when none was), the next batch's ``after``: one statement
        through the index on ``expires_at``, as ``Token.purge_batch``. The caller
        commits, once per batch.
        """
        doomed = (
            select(SpentCode.digest)
            .where(SpentCode.expires_at >= after, SpentCode.expires_at < before)
            .order_by(SpentCode.expires_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        rows = db.session.execute(
            delete(SpentCode).where(among(SpentCode.digest, doomed)).returning(SpentCode.expires_at)
        ).all()
        return len(rows), max((row.expires_at for row in rows), default=after)
