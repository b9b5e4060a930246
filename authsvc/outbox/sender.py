"""The sender: a thread of a process that claims outbox items and hands each to its kind's handler.

Each gunicorn worker starts one (config/gunicorn.py, ``post_worker_init``),
so that the work is done off the request path and by whichever instance is
up. A sender looks for work every ``AUTHSVC_OUTBOX_POLL`` seconds, and at
once when its own process committed an item. A sender only claims the kinds
it has a handler for: an instance that cannot send e-mail never claims a
message.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from flask import Flask

from authsvc.core.database import db
from authsvc.core.settings import settings
from authsvc.outbox import claims
from authsvc.outbox.models import OutboxItem, on_commit

log = logging.getLogger(__name__)

EXTENSION = "authsvc.outbox"

Handler = Callable[[OutboxItem], None]
# Seconds between a sender's deletions of long-finished items.
PURGE_INTERVAL = 3600


class GiveUp(Exception):  # noqa: N818 - what the handler tells the sender to do
    """Raised by a handler when trying again cannot help (the peer refused the item for good)."""


@dataclass
class Handlers:
    """The handler of each kind this app can handle, registered by the packages that own the kinds."""

    by_kind: dict[str, Handler] = field(default_factory=dict)
    # Called with the senders' hourly purge, in its app context: what else a feature deletes once dead.
    purgers: list[Callable[[], None]] = field(default_factory=list)

    def register(self, kind: str, handler: Handler) -> None:
        self.by_kind[kind] = handler


def init_app(app: Flask) -> None:
    app.extensions[EXTENSION] = Handlers()


def handlers(app: Flask) -> Handlers:
    found: Handlers = app.extensions[EXTENSION]
    return found


class Sender:
    """Claims and handles ``app``'s kinds of items; ``run_once`` does one round, ``start`` runs rounds in a thread."""

    def __init__(self, app: Flask, name: str | None = None) -> None:
        self.app = app
        self.name = name or f"{socket.gethostname()[:40]}:{os.getpid()}"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_purge = 0.0

    @property
    def kinds(self) -> Collection[str]:
        return handlers(self.app).by_kind.keys()

    def run_once(self) -> int:
        """Claim what is waiting and handle it; how many items were handled (done or not). Once an hour
        (and at its first round) it also deletes the items finished more than a week ago."""
        with self.app.app_context():
            try:
                if time.monotonic() >= self._next_purge:
                    self._next_purge = time.monotonic() + PURGE_INTERVAL
                    claims.purge()
                    for purge in handlers(self.app).purgers:
                        purge()
                config = settings(self.app)
                held = claims.claim(self.name, self.kinds, config.outbox_lease)
                for item in held.items:
                    self._handle(held, item, config.outbox_backoff, config.mail_give_up)
                return len(held.items)
            finally:
                db.session.remove()

    def _handle(self, held: claims.Claim, item: OutboxItem, backoff: float, give_up: int) -> None:
        handler = handlers(self.app).by_kind[item.kind]
        try:
            handler(item)
        except GiveUp as exc:
            db.session.rollback()
            log.warning("outbox item %s (%s) given up: %s", item.id, item.kind, exc)
            claims.give_up(held, item, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a failed item waits and is tried again
            db.session.rollback()
            error = f"{type(exc).__name__}: {exc}"
            log.warning("outbox item %s (%s) not handled, to be tried again: %s", item.id, item.kind, error)
            claims.failed(held, item, error, backoff, give_up)
            return
        claims.done(held, item)

    def start(self) -> None:
        """Run rounds in a daemon thread until ``stop``; nothing to start when the app has no handler."""
        if self._thread is not None or not self.kinds:
            return
        _running.append(self)
        self._thread = threading.Thread(target=self._run, name=f"outbox-{self.name}", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self in _running:
            _running.remove(self)

    def _run(self) -> None:
        poll = settings(self.app).outbox_poll
        while not self._stop.is_set():
            self._wake.clear()
            try:
                busy = self.run_once()
            except Exception:  # noqa: BLE001 - a database that is away: the next round tries again
                log.exception("the outbox sender %s could not claim work", self.name)
                busy = 0
            if not busy:
                self._wake.wait(poll)


# The senders running in this process: a commit that queued an item wakes them.
_running: list[Sender] = []


def _wake_running(kinds: set[str]) -> None:
    for sender in list(_running):
        if kinds & set(sender.kinds):
            sender.wake()


on_commit(_wake_running)
