"""Claiming outbox items so that two senders never hold the same one, and recording what became of them.

A claim is one UPDATE of a batch of waiting items to "held by this claim until
its lease ends". On PostgreSQL its subquery locks the rows it picks with ``FOR
UPDATE SKIP LOCKED``: another sender claiming at the same moment skips them
and takes the next ones instead of waiting. SQLite runs one writing statement
at a time, so the same conditional UPDATE is the claim there. Every later
write names the claim: a sender whose lease ran out (it hung past it, and
another sender took the item over) changes nothing.

Items with an ``ordering_key`` are claimed one key at a time: an item waits
while an earlier item of its key is unfinished (waiting, held, or waiting to
be tried again), so that they are handled in the order queued, even by many
senders, and a claim holds at most one item of a key. An item given up no
longer holds back those after it.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import delete, exists, or_, select, update
from sqlalchemy.orm import aliased

from authsvc.core import audit, clock
from authsvc.core.database import among, db, rows_affected
from authsvc.outbox.models import OutboxItem, wake_on_commit

# Retries wait at most this long between attempts, however many failed.
LONGEST_WAIT_MS = 3600 * 1000
# Finished items (done or given up, their payloads already gone) are kept this long, to look into.
KEPT_MS = 7 * 86400 * 1000


@dataclass(frozen=True)
class Retry:
    """What a kind's failed items do: wait ``backoff`` seconds, doubled each failure up to ``longest`` seconds;
    given up once ``give_up`` seconds old, their payload kept (to be replayed) when ``keep_given_up``."""

    backoff: float
    give_up: int
    longest: float = LONGEST_WAIT_MS / 1000
    keep_given_up: bool = False


@dataclass(frozen=True)
class Claim:
    """The items one claim holds, and the claim's name (every write about them names it)."""

    name: str
    items: list[OutboxItem]


def claim(sender: str, kinds: Collection[str], lease_seconds: int, most: int = 20) -> Claim:
    """Hold up to ``most`` waiting items of ``kinds`` for ``lease_seconds``, oldest first; commits."""
    name = f"{sender}:{secrets.token_hex(6)}"
    if not kinds:
        return Claim(name, [])
    moment = clock.now_ms()
    earlier = aliased(OutboxItem)
    waiting = (
        select(OutboxItem.id)
        .where(
            OutboxItem.kind.in_(sorted(kinds)),
            OutboxItem.done_at.is_(None),
            OutboxItem.given_up_at.is_(None),
            OutboxItem.available_at <= moment,
            or_(OutboxItem.claimed_until.is_(None), OutboxItem.claimed_until < moment),
            # The first unfinished item of its key (an item without a key has no such wait).
            ~exists().where(
                earlier.ordering_key == OutboxItem.ordering_key,
                earlier.id < OutboxItem.id,
                earlier.done_at.is_(None),
                earlier.given_up_at.is_(None),
            ),
        )
        .order_by(OutboxItem.id)
        .limit(most)
    )
    if db.session.get_bind().dialect.name == "postgresql":
        waiting = waiting.with_for_update(skip_locked=True)
    db.session.execute(
        update(OutboxItem)
        .where(among(OutboxItem.id, waiting))
        .values(claimed_by=name, claimed_until=moment + lease_seconds * 1000)
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    items = list(db.session.scalars(select(OutboxItem).where(OutboxItem.claimed_by == name).order_by(OutboxItem.id)))
    return Claim(name, items)


def done(held: Claim, item: OutboxItem) -> bool:
    """Record ``item`` as handled (its payload goes: nothing is kept that was only there to be sent)."""
    return _finish(held, item, done_at=clock.now_ms(), payload=None, claimed_until=None)


def failed(held: Claim, item: OutboxItem, error: str, retry: Retry) -> bool:
    """Record a failed attempt: tried again after a wait that doubles with each failure (``retry``), or given
    up (and audited) once the item is ``retry.give_up`` seconds old. Whether the claim still held the item."""
    moment = clock.now_ms()
    attempts = item.attempts + 1
    if moment - item.created_at >= retry.give_up * 1000:
        return give_up(held, item, error, attempts, keep_payload=retry.keep_given_up)
    wait = min(int(retry.backoff * 1000 * 2 ** min(attempts - 1, 40)), int(retry.longest * 1000))
    return _finish(
        held, item, attempts=attempts, available_at=moment + wait, claimed_until=None, last_error=error[:500]
    )


def give_up(
    held: Claim, item: OutboxItem, error: str, attempts: int | None = None, *, keep_payload: bool = False
) -> bool:
    """Stop trying ``item`` (its payload goes, unless ``keep_payload``: a kind that replays what it gave up)
    and say so in the audit log, in the same transaction."""
    attempts = attempts if attempts is not None else item.attempts + 1
    audit.record(
        "outbox.given_up",
        domain_id=item.domain_id,
        actor="outbox",
        target=f"outbox:{item.id}",
        details={"kind": item.kind, "attempts": attempts, "error": error[:500]},
        commit=False,
    )
    return _finish(
        held,
        item,
        attempts=attempts,
        given_up_at=clock.now_ms(),
        payload=item.payload if keep_payload else None,
        claimed_until=None,
        last_error=error[:500],
    )


def _finish(held: Claim, item: OutboxItem, **values: object) -> bool:
    changed = rows_affected(
        db.session.execute(
            update(OutboxItem)
            .where(OutboxItem.id == item.id, OutboxItem.claimed_by == held.name)
            .values(**values)
            .execution_options(synchronize_session=False)
        )
    )
    if changed:
        db.session.commit()
    else:
        db.session.rollback()  # another sender took the item over: nothing of ours is recorded
    return bool(changed)


def purge() -> int:
    """Delete the items finished more than a week ago; how many. Commits."""
    before = clock.now_ms() - KEPT_MS
    finished = or_(OutboxItem.done_at < before, OutboxItem.given_up_at < before)
    deleted = rows_affected(db.session.execute(delete(OutboxItem).where(finished)))
    db.session.commit()
    return deleted


def replay(kind: str, item_id: int, domain_id: int) -> bool:
    """Try the given-up item ``item_id`` (of ``kind`` and the domain, its payload kept) again from now, as
    new: in the caller's transaction, whose commit wakes this process's senders. Whether there was one."""
    moment = clock.now_ms()
    changed = rows_affected(
        db.session.execute(
            update(OutboxItem)
            .where(
                OutboxItem.id == item_id,
                OutboxItem.kind == kind,
                OutboxItem.domain_id == domain_id,
                OutboxItem.given_up_at.is_not(None),
                OutboxItem.payload.is_not(None),
            )
            .values(
                given_up_at=None,
                attempts=0,
                created_at=moment,
                available_at=moment,
                claimed_by=None,
                claimed_until=None,
            )
            .execution_options(synchronize_session=False)
        )
    )
    if changed:
        wake_on_commit(kind)
    return bool(changed)
