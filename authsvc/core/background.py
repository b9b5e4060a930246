"""Work done off the request path: a few threads of this process, fed by a bounded queue.

The audit publisher and the back-channel logout dispatcher use it. ``put``
never blocks a request: past ``bound`` waiting items the item is handed to
``on_full`` instead (they log it). A forked worker starts its own threads on
its first ``put``, because the parent's threads do not survive a fork.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class BackgroundQueue(Generic[T]):
    def __init__(
        self,
        name: str,
        handle: Callable[[T], None],
        *,
        on_full: Callable[[T], None],
        on_error: Callable[[T, Exception], None],
        threads: int = 1,
        bound: int = 1000,
    ) -> None:
        self.name, self.threads, self.bound = name, threads, bound
        self._handle, self._on_full, self._on_error = handle, on_full, on_error
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
            item = self._queue.get()
            try:
                self._handle(item)
            except Exception as exc:  # noqa: BLE001 - one failed item must not stop the thread
                try:
                    self._on_error(item, exc)
                except Exception:  # noqa: BLE001, S110 - nor may reporting it
                    pass
            finally:
                self._queue.task_done()
