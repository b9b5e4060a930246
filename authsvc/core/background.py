"""Work done off the request path: a few threads of this process, fed by a bounded queue.

The audit publisher and the back-channel logout dispatcher use it. ``put``
never blocks a request: past ``bound`` waiting items the item is handed to
``on_full`` instead (they log it). A forked worker starts its own threads on
its first ``put``, because the parent's threads do not survive a fork.

``KeyedQueue`` is the same for items sent to many destinations (back-channel
logouts to applications): a slow destination holds at most ``per_key`` of
its threads, and waits its turn, so the others' items still go.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class BackgroundQueue(Generic[T]):
    """Items handled one at a time by ``handle``; or, with ``handle_batch``, all that are waiting at once.

    ``linger`` (with ``handle_batch``): seconds to wait after the first item
    for more to come, so that a busy worker hands over many items per wake-up
    of its thread (and per round trip) rather than one per request; ``batch``
    items at most at once. A batch queue has one thread: its batches are
    handled in the order their items were put.
    """

    def __init__(
        self,
        name: str,
        handle: Callable[[T], None] | None = None,
        *,
        on_full: Callable[[T], None],
        on_error: Callable[[T, Exception], None],
        threads: int = 1,
        bound: int = 1000,
        handle_batch: Callable[[list[T]], None] | None = None,
        linger: float = 0.0,
        batch: int = 100,
    ) -> None:
        if (handle is None) == (handle_batch is None):
            raise ValueError("give handle or handle_batch")
        if handle_batch is not None and threads != 1:
            raise ValueError("a batch queue has one thread, which keeps its items in order")
        self.name, self.threads, self.bound, self.linger, self.batch = name, threads, bound, linger, batch
        self._handle, self._handle_batch = handle, handle_batch
        self._on_full, self._on_error = on_full, on_error
        self._queue: queue.Queue[T] = queue.Queue(bound)  # replaced by _start in each process
        self._pid = 0
        self._lock = threading.Lock()

    def put(self, item: T) -> None:
        if self._pid != os.getpid():
            self._start()
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._on_full(item)

    def flush(self, timeout: float = 2.0) -> None:
        """Wait (at most ``timeout`` seconds) until the items queued so far are handled."""
        if self._pid != os.getpid():
            return  # nothing was queued in this process (a fork's copy of the parent's queue has no threads)
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._queue = queue.Queue(self.bound)
            for n in range(self.threads):
                threading.Thread(target=self._run, name=f"{self.name}-{n}", daemon=True).start()
            self._pid = os.getpid()

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            if self._handle_batch is not None:
                if self.linger > 0:
                    time.sleep(self.linger)
                items += self._waiting(self.batch - 1)
            try:
                if self._handle_batch is not None:
                    self._handle_batch(items)
                else:
                    self._handle(items[0])  # type: ignore[misc]  # one of the two is given
            except Exception as exc:  # noqa: BLE001 - one failed item must not stop the thread
                for item in items:
                    try:
                        self._on_error(item, exc)
                    except Exception:  # noqa: BLE001, S110 - nor may reporting it
                        pass
            finally:
                for _ in items:
                    self._queue.task_done()

    def _waiting(self, most: int) -> list[T]:
        """Up to ``most`` of the items queued now, without waiting for more."""
        items: list[T] = []
        while len(items) < most:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return items


class KeyedQueue(Generic[T]):
    """Items put with a key (their destination), handled by ``threads`` threads, at most ``per_key`` on one key.

    Keys take turns: a key with many waiting items does not hold back another
    key's first. At most ``key_bound`` items wait per key, ``group_bound`` per
    group (a tenant: many keys of one group must not fill the queue for every
    other group) and ``bound`` in all; past that ``put`` hands the item to ``on_full``.
    """

    def __init__(
        self,
        name: str,
        handle: Callable[[T], None],
        *,
        on_full: Callable[[T], None],
        on_error: Callable[[T, Exception], None],
        threads: int = 4,
        per_key: int = 1,
        bound: int = 5000,
        key_bound: int = 500,
        group_bound: int | None = None,
    ) -> None:
        self.name, self.threads, self.per_key, self.bound, self.key_bound = name, threads, per_key, bound, key_bound
        self.group_bound = group_bound if group_bound is not None else bound
        self._handle, self._on_full, self._on_error = handle, on_full, on_error
        self._pid = 0
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._condition = threading.Condition()
        self._waiting: dict[str, deque[tuple[str | None, T]]] = {}
        self._group_waiting: dict[str, int] = {}
        self._busy: dict[str, int] = {}
        self._turns: deque[str] = deque()  # keys with an item waiting and a thread to spare, in turn
        self._size = self._unfinished = 0

    def put(self, key: str, item: T, group: str | None = None) -> None:
        if self._pid != os.getpid():
            self._start()
        with self._condition:
            waiting = self._waiting.get(key)
            full = (
                self._size >= self.bound
                or (waiting is not None and len(waiting) >= self.key_bound)
                or (group is not None and self._group_waiting.get(group, 0) >= self.group_bound)
            )
            if not full:
                self._waiting.setdefault(key, deque()).append((group, item))
                if group is not None:
                    self._group_waiting[group] = self._group_waiting.get(group, 0) + 1
                self._size += 1
                self._unfinished += 1
                self._take_turn(key)
        if full:
            self._on_full(item)

    def flush(self, timeout: float = 2.0) -> None:
        """Wait (at most ``timeout`` seconds) until the items put so far are handled."""
        if self._pid != os.getpid():
            return
        deadline = time.monotonic() + timeout
        while self._unfinished and time.monotonic() < deadline:
            time.sleep(0.01)

    def _take_turn(self, key: str) -> None:
        """Queue ``key`` for a thread if it has an item waiting, a thread to spare, and no turn yet."""
        if self._waiting.get(key) and self._busy.get(key, 0) < self.per_key and key not in self._turns:
            self._turns.append(key)
            self._condition.notify()

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._reset()  # the parent's threads and waiting items are not this process's
            for n in range(self.threads):
                threading.Thread(target=self._run, name=f"{self.name}-{n}", daemon=True).start()
            self._pid = os.getpid()

    def _next(self) -> tuple[str, T]:
        with self._condition:
            while not self._turns:
                self._condition.wait()
            key = self._turns.popleft()
            waiting = self._waiting[key]
            group, item = waiting.popleft()
            if not waiting:
                del self._waiting[key]
            if group is not None:
                self._group_waiting[group] -= 1
                if not self._group_waiting[group]:
                    del self._group_waiting[group]
            self._size -= 1
            self._busy[key] = self._busy.get(key, 0) + 1
            self._take_turn(key)  # behind the keys already waiting for theirs
            return key, item

    def _done(self, key: str) -> None:
        with self._condition:
            self._busy[key] -= 1
            if not self._busy[key]:
                del self._busy[key]
            self._unfinished -= 1
            self._take_turn(key)

    def _run(self) -> None:
        while True:
            key, item = self._next()
            try:
                self._handle(item)
            except Exception as exc:  # noqa: BLE001 - one failed item must not stop the thread
                try:
                    self._on_error(item, exc)
                except Exception:  # noqa: BLE001, S110 - nor may reporting it
                    pass
            finally:
                self._done(key)
