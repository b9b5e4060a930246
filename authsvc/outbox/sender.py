"""The sender: a thread of a process that claims outbox items and hands each to its kind's handler.

Each gunicorn worker starts one (config/gunicorn.py, ``post_worker_init``),
so that the work is done off the request path and by whichever instance is
up. A sender looks for work every ``AUTHSVC_OUTBOX_POLL`` seconds, and at
once when its own process committed an item. A sender only claims the kinds
it has a handler for: an instance that cannot send e-mail never claims a
message.

A kind registered with ``workers`` above 1 (webhooks) has a sender of its
own (``senders``) that handles that many items at once, each on its own
thread, and claims more as soon as one finishes: a peer that hangs until the
outbound deadline holds one thread, never the other items, nor the e-mail.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from flask import Flask

from authsvc.core.database import db
from authsvc.core.settings import settings
from authsvc.outbox import claims
from authsvc.outbox.models import OutboxItem, on_commit
from config.settings import Settings

log = logging.getLogger(__name__)

EXTENSION = "authsvc.outbox"

Handler = Callable[[OutboxItem], None]
# A kind's retries, from the settings of the moment.
RetryOf = Callable[[Settings], claims.Retry]
# Seconds between a sender's deletions of long-finished items.
PURGE_INTERVAL = 3600


class GiveUp(Exception):  # noqa: N818 - what the handler tells the sender to do
    """Raised by a handler when trying again cannot help (the peer refused the item for good)."""


@dataclass
class Handlers:
    """The handler of each kind this app can handle, registered by the packages that own the kinds."""

    by_kind: dict[str, Handler] = field(default_factory=dict)
    retries: dict[str, RetryOf] = field(default_factory=dict)
    # The kinds with a sender of their own, and how many items it handles at once.
    workers: dict[str, int] = field(default_factory=dict)
    # Called with the senders' hourly purge, in its app context: what else a feature deletes once dead.
    purgers: list[Callable[[], None]] = field(default_factory=list)

    def register(self, kind: str, handler: Handler, retry: RetryOf | None = None, workers: int = 1) -> None:
        """Handle ``kind`` with ``handler``; retried as ``retry`` says (by default as e-mail is); with ``workers``
        above 1, by a sender of its own that handles that many items at once."""
        self.by_kind[kind] = handler
        if retry is not None:
            self.retries[kind] = retry
        if workers > 1:
            self.workers[kind] = workers

    def retry(self, kind: str, config: Settings) -> claims.Retry:
        chosen = self.retries.get(kind)
        return chosen(config) if chosen is not None else claims.Retry(config.outbox_backoff, config.mail_give_up)


def init_app(app: Flask) -> None:
    app.extensions[EXTENSION] = Handlers()


def handlers(app: Flask) -> Handlers:
    found: Handlers = app.extensions[EXTENSION]
    return found


def senders(app: Flask) -> list[Sender]:
    """The senders a worker runs: one for the kinds handled one at a time, one per kind with ``workers``."""
    registered = handlers(app)
    own = registered.workers
    shared = [kind for kind in registered.by_kind if kind not in own]
    found = [Sender(app, kinds=shared)] if shared else []
    return found + [Sender(app, name=None, kinds=[kind], workers=count) for kind, count in own.items()]


class Sender:
    """Claims and handles ``app``'s kinds of items; ``run_once`` does one round, ``start`` runs rounds in a thread."""

    def __init__(
        self, app: Flask, name: str | None = None, kinds: Collection[str] | None = None, workers: int = 1
    ) -> None:
        """``kinds``: those it claims (default: every kind the app handles); ``workers``: items at once."""
        self.app = app
        self.name = name or f"{socket.gethostname()[:40]}:{os.getpid()}"
        self._only = set(kinds) if kinds is not None else None
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_purge = 0.0

    @property
    def kinds(self) -> Collection[str]:
        registered = handlers(self.app).by_kind.keys()
        return registered if self._only is None else [kind for kind in registered if kind in self._only]

    def run_once(self) -> int:
        """Claim what is waiting and handle it (``workers`` items at once); how many items were handled (done
        or not). Once an hour (and at its first round) it also deletes the items finished more than a week ago."""
        held = self._claim(self.workers if self.workers > 1 else 20)
        if self.workers > 1:
            for future in [self._submit(held, item) for item in held.items]:
                future.result()
        else:
            for item in held.items:
                self._handle_in_context(held, item)
        return len(held.items)

    def _claim(self, most: int) -> claims.Claim:
        with self.app.app_context():
            try:
                if time.monotonic() >= self._next_purge:
                    self._next_purge = time.monotonic() + PURGE_INTERVAL
                    claims.purge()
                    for purge in handlers(self.app).purgers:
                        purge()
                return claims.claim(self.name, self.kinds, settings(self.app).outbox_lease, most)
            finally:
                db.session.remove()

    def _submit(self, held: claims.Claim, item: OutboxItem) -> Future[None]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=f"outbox-{self.name}")
        future = self._pool.submit(self._handle_in_context, held, item)
        future.add_done_callback(lambda _: self._wake.set())  # a thread is free: claim more
        return future

    def _handle_in_context(self, held: claims.Claim, item: OutboxItem) -> None:
        with self.app.app_context():
            try:
                self._handle(held, item, handlers(self.app).retry(item.kind, settings(self.app)))
            finally:
                db.session.remove()

    def _handle(self, held: claims.Claim, item: OutboxItem, retry: claims.Retry) -> None:
        handler = handlers(self.app).by_kind[item.kind]
        try:
            handler(item)
        except GiveUp as exc:
            db.session.rollback()
            log.warning("outbox item %s (%s) given up: %s", item.id, item.kind, exc)
            claims.give_up(held, item, str(exc), keep_payload=retry.keep_given_up)
            return
        except Exception as exc:  # noqa: BLE001 - a failed item waits and is tried again
            db.session.rollback()
            error = f"{type(exc).__name__}: {exc}"
            log.warning("outbox item %s (%s) not handled, to be tried again: %s", item.id, item.kind, error)
            claims.failed(held, item, error, retry)
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
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self in _running:
            _running.remove(self)

    def _run(self) -> None:
        poll = settings(self.app).outbox_poll
        running: set[Future[None]] = set()
        while not self._stop.is_set():
            self._wake.clear()
            try:
                if self.workers > 1:
                    running = {future for future in running if not future.done()}
                    free = self.workers - len(running)
                    held = self._claim(free) if free else claims.Claim(self.name, [])
                    running |= {self._submit(held, item) for item in held.items}
                    busy = len(held.items)
                else:
                    busy = self.run_once()
            except Exception:  # noqa: BLE001 - a database that is away: the next round tries again
                log.exception("the outbox sender %s could not claim work", self.name)
                busy = 0
            if not busy or self.workers > 1:
                self._wake.wait(poll)  # in a pool, a thread that finishes sets it too


# The senders running in this process: a commit that queued an item wakes them.
_running: list[Sender] = []


def _wake_running(kinds: set[str]) -> None:
    for sender in list(_running):
        if kinds & set(sender.kinds):
            sender.wake()


on_commit(_wake_running)
