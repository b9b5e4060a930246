"""A code's single use in SQL, and what a replayed code costs: the tokens it produced.

Redis replicates asynchronously: after a failover a code claimed just before
may be there again, unclaimed. The spent code's row, written in the statement
that saves the exchange's tokens (authsvc.tokens.rows), is what makes a code
single-use whatever Redis lost (fails closed); a second exchange is a replay
(RFC 6749 4.1.2: what the code produced is revoked).
"""

from __future__ import annotations

import logging

from authsvc.core import actors, audit, security
from authsvc.core.database import db, now
from authsvc.core.models import Application, SpentCode
from authsvc.core.settings import settings
from authsvc.tokens import revocation, rows

log = logging.getLogger(__name__)


def row(code: str, family: str) -> rows.SpentCodeRow:
    """The values that note ``code`` spent, in the statement that saves its tokens (authsvc.tokens.rows)."""
    return rows.SpentCodeRow(
        spent_digest=security.digest(code), spent_family=family, spent_until=now() + settings().spent_code_ttl
    )


def earlier_family(digest: str) -> str | None:
    """The family of the exchange that spent the code of ``digest`` before, or None if none did."""
    earlier = db.session.get(SpentCode, digest)
    return None if earlier is None else earlier.family


def revoke_replayed(client: Application, family: str) -> None:
    """Revoke the tokens of ``family``, produced by a code presented again, with its audit record; committed."""
    revoked = revocation.revoke_family(family)
    audit.record(
        "code.replayed",
        domain_id=client.domain_id,
        actor=actors.of_client(client.client_id),
        details={"revoked": revoked},
        commit=False,
    )
    db.session.commit()
    log.warning("authorization code replayed; revoked %d token(s) of its grant", revoked)
