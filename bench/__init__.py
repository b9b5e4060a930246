"""Benchmarks of authsvc, run by hand: ``python -m bench`` (see bench/README.md).

The servers it needs (PostgreSQL, Redis, gunicorn) come from ``devtools.services``.
"""

from devtools.services import ServiceError


class BenchError(ServiceError):
    """The benchmark cannot go on; the message says why."""


def say(message: str) -> None:
    print(f"bench: {message}", flush=True)
