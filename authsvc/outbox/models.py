"""The outbox table: one row per item of work to do after its transaction commits."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import BigInteger, Index, Integer, String, Text, event
from sqlalchemy.orm import Mapped, Session, mapped_column

from authsvc.core import clock, security
from authsvc.core.database import Model, db

# Set in a session that queued an item, so that its commit wakes this process's sender.
QUEUED = "authsvc.outbox.queued"


class OutboxItem(Model):
    """An item of ``kind`` and its payload, encrypted: a message may carry a link that signs someone in.

    ``available_at``: when it may next be tried (ms); ``claimed_by``/``claimed_until``: the
    sender holding it and until when (a sender that died lets go when its lease ends);
    ``done_at``/``given_up_at``: finished, the payload cleared (kept when the kind replays what it gave up).
    ``ordering_key``: items of one key are handled one at a time, in the order queued
    (``authsvc.outbox.claims``); None: in any order.
    """

    __tablename__ = "outbox_item"
    # The senders' question: what is waiting, of these kinds, oldest first.
    __table_args__ = (
        Index("ix_outbox_item_waiting", "done_at", "given_up_at", "available_at"),
        # The claim's question of a keyed item: is an earlier one of its key unfinished?
        Index("ix_outbox_item_ordering", "ordering_key", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(40))
    domain_id: Mapped[int | None] = mapped_column(Integer)
    payload: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(BigInteger)
    available_at: Mapped[int] = mapped_column(BigInteger)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    claimed_by: Mapped[str | None] = mapped_column(String(64))
    claimed_until: Mapped[int | None] = mapped_column(BigInteger)
    done_at: Mapped[int | None] = mapped_column(BigInteger)
    given_up_at: Mapped[int | None] = mapped_column(BigInteger)
    # Why the last attempt failed (no secret: an exception's class and the peer's reply).
    last_error: Mapped[str | None] = mapped_column(String(500))
    ordering_key: Mapped[str | None] = mapped_column(String(120))

    def read(self) -> str:
        """The payload as queued."""
        return security.decrypt(self.payload or "")


def queue(kind: str, payload: str, domain_id: int | None = None, ordering_key: str | None = None) -> OutboxItem:
    """Add an item to the caller's transaction: it exists once, and only if, the caller commits.

    Items of one ``ordering_key`` are handled one after the other, in the order queued."""
    moment = clock.now_ms()
    item = OutboxItem(
        kind=kind,
        domain_id=domain_id,
        payload=security.encrypt(payload),
        created_at=moment,
        available_at=moment,
        attempts=0,
        ordering_key=ordering_key,
    )
    db.session.add(item)
    wake_on_commit(kind)
    return item


def wake_on_commit(kind: str) -> None:
    """Have the commit of the caller's transaction wake this process's senders of ``kind``."""
    session = db.session()
    if not session.info.get(QUEUED):
        # Only a session that queued listens for its commit: every other commit costs nothing more.
        event.listen(session, "after_commit", _committed, once=True)
    session.info.setdefault(QUEUED, set()).add(kind)


# Told the kinds a commit queued (authsvc.outbox.sender wakes this process's senders).
_listeners: list[Callable[[set[str]], None]] = []


def on_commit(wake: Callable[[set[str]], None]) -> None:
    """Call ``wake(kinds)`` after each commit of a session that queued items."""
    _listeners.append(wake)


def _committed(session: Session) -> None:
    kinds: set[str] = session.info.pop(QUEUED, set())
    for wake in _listeners:
        wake(kinds)
