"""core.background: the bounded queue behind the audit publisher and back-channel logout, with real threads."""

from __future__ import annotations

import os
import threading
import time

import pytest

from authsvc.core.background import BackgroundQueue, KeyedQueue


def test_items_are_handled_off_the_caller_and_a_full_queue_hands_them_over():
    taken, release, handled, dropped, failed = threading.Event(), threading.Event(), [], [], []

    def handle(item: int) -> None:
        taken.set()
        release.wait(5)
        if item == 2:
            raise ValueError("broken item")
        handled.append(item)

    work = BackgroundQueue(
        "test", handle, on_full=dropped.append, on_error=lambda item, exc: failed.append((item, str(exc))), bound=2
    )
    started = time.monotonic()
    work.put(0)
    assert taken.wait(5), "the queue's thread takes the first item"
    for item in range(1, 5):  # two wait in the queue; the rest find it full
        work.put(item)
    assert time.monotonic() - started < 0.5, "put never waits"
    assert dropped == [3, 4]
    release.set()
    work.flush(timeout=5)
    assert handled == [0, 1]
    assert failed == [(2, "broken item")]


def test_a_broken_error_handler_does_not_stop_the_queue():
    handled = []

    def handle(item: int) -> None:
        if item == 0:
            raise ValueError("first")
        handled.append(item)

    def on_error(item: int, exc: Exception) -> None:
        raise RuntimeError("the reporter broke too")

    work = BackgroundQueue("test", handle, on_full=lambda item: None, on_error=on_error)
    work.put(0)
    work.put(1)
    work.flush(timeout=5)
    assert handled == [1]


def test_a_batch_queue_hands_over_what_waits_at_once_in_order_and_reports_each_item_of_a_failed_batch():
    batches, failed = [], []

    def handle_batch(items: list[int]) -> None:
        batches.append(items)
        if 99 in items:
            raise ValueError("Redis went away")

    # A linger long enough that every put below lands in the first batch, however slow the machine.
    work = BackgroundQueue(
        "test",
        handle_batch=handle_batch,
        linger=0.5,
        on_full=lambda item: None,
        on_error=lambda item, exc: failed.append((item, str(exc))),
    )
    for item in range(5):
        work.put(item)
    work.flush(timeout=5)
    assert batches == [[0, 1, 2, 3, 4]]
    assert failed == []
    work.put(98)
    work.put(99)
    work.flush(timeout=5)
    assert batches[1:] == [[98, 99]]
    assert failed == [(98, "Redis went away"), (99, "Redis went away")]


def test_a_batch_queue_hands_over_at_most_its_batch_in_order_and_has_one_thread():
    batches = []
    work = BackgroundQueue(
        "test", handle_batch=batches.append, linger=0.5, batch=2, on_full=lambda item: None, on_error=print
    )
    for item in range(5):
        work.put(item)
    work.flush(timeout=5)
    assert [item for batch in batches for item in batch] == [0, 1, 2, 3, 4]
    assert max(len(batch) for batch in batches) == 2
    with pytest.raises(ValueError, match="one thread"):
        BackgroundQueue("test", handle_batch=batches.append, threads=2, on_full=print, on_error=print)


def test_a_forked_child_that_queued_nothing_does_not_wait_on_its_parents_queue():
    release = threading.Event()
    work = BackgroundQueue("test", lambda item: release.wait(10), on_full=lambda item: None, on_error=print)
    work.put("held")  # the parent's queue has an unfinished item while it forks
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the child: as a gunicorn worker at exit (atexit flush)
        started = time.monotonic()
        work.flush(timeout=3)
        os.write(writer, f"{time.monotonic() - started:.3f}".encode())
        os._exit(0)
    os.close(writer)
    waited = float(os.read(reader, 64).decode())
    os.waitpid(child, 0)
    release.set()
    work.flush(timeout=5)
    assert waited < 0.5, f"the child waited {waited} s for items it never had"


def test_a_key_whose_items_hang_holds_one_thread_and_never_another_keys_items():
    taken, release, handled, dropped = threading.Event(), threading.Event(), [], []

    def handle(item: tuple[str, int]) -> None:
        if item[0] == "slow":
            taken.set()
            release.wait(5)
        handled.append(item)

    work = KeyedQueue("test", handle, on_full=dropped.append, on_error=print, threads=2, per_key=1, key_bound=3)
    work.put("slow", ("slow", 0))
    assert taken.wait(5), "a thread takes the first item"
    for n in range(1, 5):  # three wait; the fourth finds its key full
        work.put("slow", ("slow", n))
    for n in range(3):
        work.put("fast", ("fast", n))
    deadline = time.monotonic() + 2
    while len(handled) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert handled == [("fast", 0), ("fast", 1), ("fast", 2)]
    assert dropped == [("slow", 4)]
    release.set()
    work.flush(timeout=5)
    assert sorted(handled) == [*(("fast", n) for n in range(3)), *(("slow", n) for n in range(4))]


def test_one_groups_waiting_items_cannot_fill_the_queue_for_another_group():
    # One domain's applications with slow receivers (many destinations, so the per-destination bound does not
    # stop them) must not fill the queue every domain shares: past its group's bound its items are dropped,
    # and another domain's logouts are still queued and sent.
    taken, release, handled, dropped = threading.Event(), threading.Event(), [], []

    def handle(item: tuple[str, int]) -> None:
        if not taken.is_set():
            taken.set()
            release.wait(5)
        handled.append(item)

    work = KeyedQueue("test", handle, on_full=dropped.append, on_error=print, threads=1, bound=6, group_bound=3)
    work.put("first", ("a", 0), "a")
    assert taken.wait(5), "a thread takes the first item and hangs"
    for n in range(1, 5):  # each to its own destination: three wait, the fourth finds its group full
        work.put(f"slow-{n}", ("a", n), "a")
    work.put("elsewhere", ("b", 0), "b")
    assert dropped == [("a", 4)]
    release.set()
    work.flush(timeout=5)
    assert ("b", 0) in handled
    assert sorted(handled) == [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("b", 0)]
