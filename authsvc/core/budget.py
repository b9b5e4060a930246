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
per statement. The views declared ``@unbudgeted`` (authsvc.core.policy: the admin API, the
console, the listings and the health checks) keep the longer ``AUTHSVC_STATEMENT_TIMEOUT`` per
statement (docs/operations.md).

``DatabaseBudget`` (WSGI, in front of inspect's fast path and of Flask) opens
the budget of a request; ``current()`` gives it to the waits in
authsvc.core.database and authsvc.core.readers.pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import psycopg
from flask import Flask

from authsvc.core.policy import policy_of


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


@dataclass(frozen=True)
class BudgetedPaths:
    """Which paths get the budget, decided on the path alone: the middleware runs before any routing."""

    # Budgeted although under an unbudgeted prefix (inspect, beside the admin API): asked first.
    budgeted: frozenset[str] = frozenset()
    unbudgeted: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    def __call__(self, path: str) -> bool:
        return path in self.budgeted or not (path in self.unbudgeted or path.startswith(self.prefixes))


def declared_paths(app: Flask) -> BudgetedPaths:
    """The paths of the views declared ``@unbudgeted`` (authsvc.core.policy), and of the budgeted ones among them.

    An unbudgeted blueprint with a URL prefix gives its prefix (a path nobody routes there is
    unbudgeted too); an unbudgeted view its paths, up to the first argument of a path that has one.
    """
    prefixes = {bp.url_prefix for bp in app.blueprints.values() if not policy_of(bp).budgeted and bp.url_prefix}
    unbudgeted: set[str] = set()
    budgeted: set[str] = set()
    budgeted_prefixes: set[str] = set()
    for rule in app.url_map.iter_rules():
        blueprint = app.blueprints.get(rule.endpoint.rpartition(".")[0])
        path = rule.rule.split("<")[0]
        if policy_of(app.view_functions[rule.endpoint]).budgeted and policy_of(blueprint).budgeted:
            (budgeted_prefixes if rule.arguments else budgeted).add(path)
        else:
            (prefixes if rule.arguments else unbudgeted).add(path)
    starts = tuple(sorted(prefixes))
    # Told apart by the path alone, or the declarations cannot hold: refuse to start.
    if budgeted & unbudgeted or any(path.startswith(starts) for path in budgeted_prefixes):
        raise RuntimeError("a path has budgeted and unbudgeted views: declare them on separate paths")
    shadowed = frozenset(path for path in budgeted if path.startswith(starts))
    return BudgetedPaths(shadowed, frozenset(unbudgeted), starts)


Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class DatabaseBudget:
    """WSGI middleware: gives each budgeted request its ``seconds`` of database time."""

    def __init__(self, wsgi_app: Wsgi, seconds: float):
        self.wsgi_app = wsgi_app
        self.seconds = seconds
        # Every path until the views are known (``declared_paths``, once the blueprints are registered).
        self.paths = BudgetedPaths()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not self.paths(environ.get("PATH_INFO", "")):
            return self.wsgi_app(environ, start_response)
        token = _CURRENT.set(Budget(self.seconds))
        try:
            return self.wsgi_app(environ, start_response)
        finally:
            _CURRENT.reset(token)
