"""One wall-clock deadline for an outbound exchange, whatever the peer does.

A socket timeout bounds each wait, not the exchange: a peer that sends a byte
just before each timeout holds the caller for ever. A ``Deadline`` notes the
sockets an exchange uses (``watch``); when it passes, one watchdog thread per
process shuts them down, which ends any wait on them at once, in whichever
thread it is. Every outbound HTTP request (authsvc.core.outbound) and every
LDAP sign-in (authsvc.auth.ldap_client) runs under one.

The sockets are watched through a duplicate of their descriptor, owned by the
deadline and closed with it: the watchdog never touches a descriptor number
that the exchange may have closed and the process reused.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class DeadlineExceeded(TimeoutError):
    """The exchange's deadline passed; its sockets were shut down."""


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.expired = False
        self._closed = False
        self._watched: list[socket.socket] = []
        self._lock = threading.Lock()

    def remaining(self) -> float:
        """Seconds left; DeadlineExceeded when none are."""
        left = self.at - time.monotonic()
        if left <= 0 or self.expired:
            raise DeadlineExceeded(f"no answer within the deadline of {self.seconds:g} s")
        return left

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline passes (at once if it has)."""
        try:
            twin = socket.socket(sock.family, sock.type, sock.proto, fileno=os.dup(sock.fileno()))
        except OSError:
            return  # already closed: nothing left to wait on
        with self._lock:
            if self._closed:
                twin.close()
                return
            self._watched.append(twin)
            if self.expired:
                _shut(twin)

    def expire(self) -> None:
        with self._lock:
            if self._closed:
                return
            self.expired = True
            for twin in self._watched:
                _shut(twin)

    def close(self) -> None:
        """The exchange is over: forget its sockets (the duplicates are closed, the originals untouched)."""
        with self._lock:
            self._closed = True
            for twin in self._watched:
                twin.close()
            self._watched.clear()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # not connected yet, or already gone: its own timeout ends the wait


class _Watchdog:
    """One thread per process that expires deadlines as they pass (started again in a forked child)."""

    def __init__(self) -> None:
        self._pid = 0
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._condition = threading.Condition()
        self._starting = threading.Lock()

    def arm(self, deadline: Deadline) -> None:
        if self._pid != os.getpid():
            with self._starting:
                if self._pid != os.getpid():
                    self._start()
        with self._condition:
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            self._condition.notify()

    def _start(self) -> None:
        # The parent's thread and lock state do not survive a fork: start afresh.
        self._condition = threading.Condition()
        self._heap = []
        self._pid = os.getpid()
        threading.Thread(target=self._run, name="authsvc-deadlines", daemon=True).start()

    def _run(self) -> None:
        condition = self._condition
        with condition:
            while True:
                if not self._heap:
                    condition.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    condition.wait(wait)
                    continue
                heapq.heappop(self._heap)[2].expire()


_WATCHDOG = _Watchdog()
_current: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("authsvc_deadline", default=None)


@contextmanager
def within(seconds: float) -> Iterator[Deadline]:
    """Run the block under a deadline of ``seconds``: sockets it ``watch``es are shut down when it passes.

    Nested, the inner deadline is the outer one when that comes first: it never outlives it.
    """
    outer = _current.get()
    deadline = Deadline(min(seconds, outer.remaining()) if outer is not None else seconds)
    _WATCHDOG.arm(deadline)
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)
        deadline.close()


def current() -> Deadline | None:
    """The deadline the caller runs under, if any."""
    return _current.get()


def watch(sock: socket.socket) -> None:
    """Shut ``sock`` down when the caller's deadline passes (nothing without one)."""
    deadline = _current.get()
    if deadline is not None:
        deadline.watch(sock)
