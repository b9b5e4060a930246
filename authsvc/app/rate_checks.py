"""Checking a request against its rates: each rate parsed once, counted by the limits library's strategy.

authsvc.app.limits says which rates a view (or a blueprint) counts against; this module checks
them. Flask-Limiter made the store and the strategy (``Limiter.storage``), and its
``RateLimitExceeded`` is the 429's exception, but its request hooks are not run: they resolve
every limit again on each request, parsing each rate from its string, building and hashing a
record per limit, about 1,000 Python calls a token request (bench/README.md, "Flask-Limiter
parsed once"). Here each rate is a ``limits.RateLimitItem`` made when the app is built, and a
request runs through its view's tuple of them, in the order Flask-Limiter checked them (the
shortest window first; as declared among equal ones), stopping at the first it is over.

A rate that counts only some answers (``deduct_when``) is tested before the view and counted
after it (``count_answered``, an after-request hook); the others are counted before the view.
A rate that waits for the client (``until_client``: the client's own rate, where the view
authenticates its client) is neither: it is settled when the view knows its client
(``settle_client``, called through authsvc.oauth.clients.identified). A confidential client that
authenticated is counted there, in the one round trip that tests and counts (``hit``), where a test
before the view and a count after it took two; a public client is tested there and counted after
the view, as before. A request whose client never authenticates is not counted against it (nobody
spends a client's rate by naming it), and a view that never gets to its client counts it after the
view by ``deduct_when``, as before.
Redis unreachable: the counting goes on in this process's memory, and Redis is asked again
after 1, 2, 4 ... 32 s, as Flask-Limiter's in-memory fallback does; a failure to count never
fails a request.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Response
from flask_limiter import RateLimitExceeded
from limits import RateLimitItem
from limits.storage import MemoryStorage, Storage
from limits.strategies import SlidingWindowCounterRateLimiter
from werkzeug.exceptions import TooManyRequests

from authsvc.core.request_state import part

log = logging.getLogger(__name__)

# The strategy, by Flask-Limiter's name for it and by the limits library's class.
STRATEGY = "sliding-window-counter"
_Strategy = SlidingWindowCounterRateLimiter
# Redis asked again after 2**n seconds while it does not answer, n at most this (Flask-Limiter's bound).
_MOST_DOUBLINGS = 5


@dataclass(frozen=True, eq=False)
class Counted:
    """One rate as a request is checked against it: its parsed rate, its key, and when it applies or counts."""

    scope: str
    item: RateLimitItem
    key: Callable[[], str]
    # The request is spared this rate when it answers True.
    exempt_when: Callable[[], bool] | None = None
    # Counted after the view, when it answers True for the response; tested before it.
    deduct_when: Callable[[Response], bool] | None = None
    # When it answers True, settled once the view knows the request's client (Counter.settle_client), not before
    # the view.
    until_client: Callable[[], bool] | None = None


class Exceeded(RateLimitExceeded):
    """Over a rate: Flask-Limiter's exception (its handler answers 429), described by the rate, as its own is."""

    def __init__(self, limit: Counted) -> None:
        self.counted = limit
        self.response = None
        TooManyRequests.__init__(self, description=str(limit.item))


@dataclass
class Checked:
    """What a request's checks left for after the view: the rates to count then, and the one it was over."""

    deductions: list[tuple[Counted, str]] = field(default_factory=list)
    # The rates that wait for the client (``until_client``), until it is known.
    waiting: list[tuple[Counted, str]] = field(default_factory=list)
    breached: tuple[Counted, str] | None = None


class Counter:
    """The strategy over the limiter's store, or over this process's memory while that store fails."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.shared = _Strategy(storage)
        self.local = _Strategy(MemoryStorage())
        self._failed_at: float | None = None
        self._doublings = 0

    def strategy(self) -> SlidingWindowCounterRateLimiter:
        """The shared store's strategy, or the local one while the store is down (asked again now and then)."""
        if self._failed_at is None:
            return self.shared
        if time.time() - self._failed_at > 2**self._doublings:
            self._failed_at = time.time()
            self._doublings = min(self._doublings + 1, _MOST_DOUBLINGS)
            if self._store_answers():
                log.info("rate limit storage recovered")
                self._failed_at, self._doublings = None, 0
                return self.shared
        return self.local

    def _store_answers(self) -> bool:
        try:
            return bool(self.storage.check())
        except Exception:  # noqa: BLE001 - a store that cannot say is down
            return False

    def failed(self) -> bool:
        """Note the shared store failed; False if it was already the local one that failed."""
        if self._failed_at is not None:
            return False
        log.warning("rate limit storage unreachable: counting in this process")
        self._failed_at = time.time()
        return True

    def check(self, limits: tuple[Counted, ...]) -> None:
        """Count the request against ``limits`` (or test those counted after the view); over one: Exceeded."""

        def forget() -> None:
            checked = part(Checked)
            checked.deductions.clear()
            checked.waiting.clear()

        self._run(lambda strategy: self._evaluate(limits, strategy), forget)

    def settle_client(self, confidential: bool) -> None:
        """The view knows its client: count a ``confidential`` one that authenticated against the rates that
        waited for it (test a public one's: it counts after the view, if answered); over one: Exceeded."""
        checked = part(Checked)
        waiting, checked.waiting = tuple(checked.waiting), []
        if waiting:
            self._run(lambda strategy: self._settle(waiting, confidential, strategy), lambda: None)

    def _run(self, evaluate: Callable[[SlidingWindowCounterRateLimiter], None], forget: Callable[[], None]) -> None:
        """``evaluate`` on the shared store's strategy; when that store fails, ``forget`` what it noted and
        evaluate on the local one. Never fails the request over a count."""
        try:
            evaluate(self.strategy())
        except RateLimitExceeded:
            raise
        except Exception:
            if not self.failed():
                log.exception("could not check the request's rates")
                return
            forget()
            try:
                evaluate(self.local)
            except RateLimitExceeded:
                raise
            except Exception:
                log.exception("could not check the request's rates")

    def _evaluate(self, limits: tuple[Counted, ...], strategy: SlidingWindowCounterRateLimiter) -> None:
        checked = part(Checked)
        for limit in limits:
            if limit.exempt_when is not None and limit.exempt_when():
                continue
            key = limit.key()
            if not key:
                log.error("skipping limit %s: no key for this request", limit.item)
                continue
            if limit.until_client is not None and limit.until_client():
                checked.waiting.append((limit, key))
                continue
            if limit.deduct_when is not None:
                checked.deductions.append((limit, key))
                allowed = strategy.test(limit.item, key, limit.scope)
            else:
                allowed = strategy.hit(limit.item, key, limit.scope)
            if not allowed:
                _over(checked, limit, key)

    def _settle(
        self, waiting: tuple[tuple[Counted, str], ...], confidential: bool, strategy: SlidingWindowCounterRateLimiter
    ) -> None:
        checked = part(Checked)
        tested = []
        for limit, key in waiting:
            if confidential:
                allowed = strategy.hit(limit.item, key, limit.scope)
            else:
                tested.append((limit, key))
                allowed = strategy.test(limit.item, key, limit.scope)
            if not allowed:
                _over(checked, limit, key)
        checked.deductions.extend(tested)

    def count_answered(self, response: Response) -> Response:
        """After the view: count the rates that count only some answers, where this one counts."""
        checked = part(Checked)
        # The rates still waiting: the view never got to its client (or never authenticated it).
        for limit, key in [*checked.deductions, *checked.waiting]:
            if limit.deduct_when is not None and limit.deduct_when(response):
                try:
                    self.strategy().hit(limit.item, key, limit.scope)
                except Exception:  # noqa: BLE001 - as before the view: never fail a request over its count
                    self.failed()
                    log.exception("could not count the request against %s", limit.scope)
        return response

    def reset_at(self) -> float | None:
        """When the rate this request was over lets a request through again (a timestamp), None if it was over none."""
        breached = part(Checked).breached
        if breached is None:
            return None
        limit, key = breached
        # As Flask-Limiter's RequestLimit.reset_at: the window's reset time, a second after.
        return int(self.strategy().get_window_stats(limit.item, key, limit.scope).reset_time + 1)


def _over(checked: Checked, limit: Counted, key: str) -> None:
    log.info("ratelimit %s (%s) exceeded: %s", limit.item, key, limit.scope)
    checked.breached = (limit, key)
    raise Exceeded(limit)


def ordered(limits: list[Counted]) -> tuple[Counted, ...]:
    """The order Flask-Limiter checks them: the shortest window first, as declared among equal ones."""
    return tuple(sorted(limits, key=lambda limit: limit.item))


def guarded(counter: Counter, limits: tuple[Counted, ...], view: Callable[..., Any]) -> Callable[..., Any]:
    """``view``, checked against ``limits`` before it runs."""

    @functools.wraps(view)
    def checked_view(*args: Any, **kwargs: Any) -> Any:
        counter.check(limits)
        return view(*args, **kwargs)

    return checked_view
