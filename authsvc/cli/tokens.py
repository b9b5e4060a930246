"""``tokens``: maintenance of the issued tokens."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from authsvc.cli.common import emit
from authsvc.core.database import db, now
from authsvc.tokens import revocation

# Where a purge starts: the least moment the columns (32-bit integers) can hold.
EARLIEST = -(2**31)

tokens = AppGroup("tokens", help="Issued access and refresh tokens.")


@tokens.command("purge")
@click.option(
    "--older-than",
    "days",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Keep rows that expired or were revoked less than DAYS ago.",
)
@click.option("--batch-size", type=click.IntRange(min=1, max=100_000), default=1000, show_default=True)
def purge_tokens(days: int, batch_size: int) -> None:
    """Delete expired and revoked tokens, one short statement and transaction per batch.

    Each batch starts where the last one ended (``purgeable_at``), so that it
    reads only the rows it deletes, however many earlier batches deleted: a
    purge of millions of rows is as gentle on live traffic at its end as at
    its start.
    """
    before = now() - days * 86400
    expired = revoked = batches = 0
    after = EARLIEST
    while True:
        batch_expired, batch_revoked, after = revocation.purge_batch(after, before, batch_size)
        db.session.commit()
        if batch_expired + batch_revoked:
            batches += 1
            expired += batch_expired
            revoked += batch_revoked
        if batch_expired + batch_revoked < batch_size:
            break  # none left (or the rest held by live requests: the next purge takes those)
    # Spent codes past their TTL: no such code can be presented any more.
    spent, after = batch_size, EARLIEST
    while spent == batch_size:
        spent, after = revocation.purge_spent_codes(after, now(), batch_size)
        db.session.commit()
    emit({"deleted": expired + revoked, "expired": expired, "revoked": revoked, "batches": batches, "before": before})
