"""The service's clock: the time every rule that depends on the time of day reads (expiry, max_age, lockouts).

One seam, so that tests move time forward (``advance``) instead of sleeping
for whole seconds: the ``clock`` fixture in tests/helpers does, and puts it
back after the test. Redis expires its keys by its own clock, and the bounds
on network waits are measured with ``time.monotonic``: neither reads this.
"""

from __future__ import annotations

import time as _time

# Seconds added to the system's time; only tests change it.
_offset = 0.0


def time() -> float:
    """Seconds since the epoch, as a float (as ``time.time``)."""
    return _time.time() + _offset


def now() -> int:
    """Whole seconds since the epoch: what tokens, codes and sessions are dated by."""
    return int(time())


def now_ms() -> int:
    """Milliseconds since the epoch (a session's ``created``, ``sessions_valid_after``)."""
    return int(time() * 1000)


def advance(seconds: float) -> None:
    """Move the clock forward by ``seconds`` (tests)."""
    global _offset
    _offset += seconds


def reset() -> None:
    """Put the clock back on the system's time (tests)."""
    global _offset
    _offset = 0.0
