"""``tokens``: maintenance of the issued tokens."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from authsvc.cli.common import emit
from authsvc.core.database import db, now
from authsvc.tokens import revocation

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
    """Delete expired and revoked tokens, one short transaction per batch."""
    before = now() - days * 86400
    expired = revoked = batches = 0
    while True:
        batch_expired, batch_revoked = revocation.purge_batch(before, batch_size)
        db.session.commit()
        if not batch_expired + batch_revoked:
            break
        batches += 1
        expired += batch_expired
        revoked += batch_revoked
        if batch_expired + batch_revoked < batch_size:
            break
    revocation.purge_spent_codes(now())  # spent codes past their TTL: no such code can be presented any more
    db.session.commit()
    emit({"deleted": expired + revoked, "expired": expired, "revoked": revoked, "batches": batches, "before": before})
