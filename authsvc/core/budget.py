"""One database budget per request: a hung PostgreSQL costs a request one deadline, not one per statement.

The requests people and API servers wait on (inspect, sign-in, authorise,
token, UserInfo, the device page, and every other page of the service) get
``AUTHSVC_DATABASE_TIMEOUT`` seconds of database for the whole request:
connecting, pinging and every statement share it (each wait is bounded by
what is left, and what it took is taken off), and the wait for a pooled
connection is bounded by the whole budget (``pool_timeout``). Once it is
spent, or once one wait on the database timed out or failed, every further
statement of the request fails at once, so that the request answers
503 within the budget plus the watchdog's tick, not after a statement timeout
per statement. The admin API, the console and the listings keep the longer
``AUTHSVC_STATEMENT_TIMEOUT`` per statement (docs/operations.md).

``DatabaseBudget`` (WSGI, in front of inspect's fast path and of Flask) opens
the budget of a request; ``current()`` gives it to the waits in
authsvc.core.database and authsvc.core.readers.pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

import psycopg

# Paths that keep the per-statement timeout: administration and listings,
# whose statements may legitimately run long, and the health checks, which
# bound their own waits. Inspect and the delegated provider tokens share the
# admin API's prefix, but API servers wait on them: they are budgeted.
INSPECT_PATH = "/api/engine/v2/api_keys/inspect"
BUDGETED_API_PATHS = frozenset({INSPECT_PATH, "/api/engine/v2/users/resource_token"})
UNBUDGETED_PREFIXES = (
    "/api/",
    "/auth/admin",
    "/auth/oauth/authorized_applications",
    "/healthz",
    "/readyz",
    "/metrics",
)


class Budget:
    """The database time a request has left, and whether one of its waits already failed.

    Time spent elsewhere (bcrypt, a call to an identity provider or a
    directory) is not counted: only the waits on PostgreSQL are (``spend``).
    """

    __slots__ = ("left", "failed")

    def __init__(self, seconds: float):
        self.left = seconds
        self.failed = False

    def remaining(self) -> float:
        """Seconds left (0 once spent or after a failed wait)."""
        return 0.0 if self.failed else max(0.0, self.left)


class BudgetSpent(psycopg.OperationalError):
    """Raised instead of waiting on the database once the request's budget is spent.

    A DBAPI OperationalError, so that SQLAlchemy wraps it as it wraps a lost
    connection and the request answers 503 through the same handlers.
    """


_CURRENT: ContextVar[Budget | None] = ContextVar("authsvc_database_budget", default=None)


def current() -> Budget | None:
    """The budget of the request being served, or None (unbudgeted: CLI, admin, background threads)."""
    return _CURRENT.get()


def bounded(seconds: float) -> float:
    """``seconds``, or less if the request's budget has less left; BudgetSpent if nothing is left."""
    budget = _CURRENT.get()
    if budget is None:
        return seconds
    left = budget.remaining()
    if left <= 0:
        budget.failed = True
        raise BudgetSpent("the request's database time (AUTHSVC_DATABASE_TIMEOUT) is spent")
    return min(seconds, left)


def spend(seconds: float) -> None:
    """Count ``seconds`` waited on the database against the request's budget."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.left -= seconds


def note_failure() -> None:
    """A wait on the database failed or timed out: the rest of the request fails at once."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.failed = True


def budgeted(path: str) -> bool:
    return path in BUDGETED_API_PATHS or not path.startswith(UNBUDGETED_PREFIXES)


Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class DatabaseBudget:
    """WSGI middleware: gives each budgeted request its ``seconds`` of database time."""

    def __init__(self, wsgi_app: Wsgi, seconds: float):
        self.wsgi_app = wsgi_app
        self.seconds = seconds

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not budgeted(environ.get("PATH_INFO", "")):
            return self.wsgi_app(environ, start_response)
        token = _CURRENT.set(Budget(self.seconds))
        try:
            return self.wsgi_app(environ, start_response)
        finally:
            _CURRENT.reset(token)
