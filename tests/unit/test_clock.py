"""The service's clock (authsvc.core.clock): the seam tests move instead of sleeping."""

from __future__ import annotations

import time

from authsvc.core.database import now


def test_advancing_the_clock_moves_every_reading_of_it(clock):
    before = time.time()
    clock.advance(3600)
    assert clock.time() >= before + 3600
    assert clock.now() >= int(before) + 3600
    assert clock.now_ms() >= int(before * 1000) + 3_600_000
    assert now() >= int(before) + 3600, "the database's timestamps read the same clock"


def test_the_clock_is_back_on_the_systems_time_after_a_test(clock):
    assert abs(clock.time() - time.time()) < 5
