"""Authorisation codes already exchanged, kept in SQL so that a Redis failover cannot make one valid again.

Codes live in Redis, and Redis replicates asynchronously: a code claimed
just before its primary died may be back, unclaimed, on the promoted
replica. The exchange that spends a code also inserts the code's digest
here, in the transaction that saves its tokens; a second exchange of the
same code fails on the primary key and is refused as a replay (RFC 6749
4.1.2), whatever Redis says. docs/deployment.md, "High availability".
"""

from __future__ import annotations

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core.database import Model


class SpentCode(Model):
    """A spent code's digest, the family its tokens joined, and when the row may go (the code's spent TTL)."""

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    family: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[int] = mapped_column(Integer, index=True)
