"""The readers: PostgreSQL connections of their own (psycopg_pool, prepared statements, autocommit) and read_one.

Used by every one-row lookup that runs per request: inspect's credentials, the grants' client,
user and refresh-token reads, the current signing key and a session's user (authsvc.core.readers).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
import weakref
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

import psycopg
from flask import Flask, current_app
from psycopg_pool import ConnectionPool, PoolTimeout
from sqlalchemy import Engine, Select, event
from sqlalchemy.exc import DBAPIError

from authsvc.core import budget
from authsvc.core.database import client_deadline, connect_settings, db, in_transaction
from authsvc.core.readers import roundtrip
from authsvc.core.settings import settings

log = logging.getLogger(__name__)


_NAMES = itertools.count(1)

# The readers run one-row lookups: a row found by a unique index (a token's or
# key's digest, a client_id, a primary key), joined to its user, client or
# domain by primary key (inspect's lookups, the grants' and the session user's
# reads), and a domain's current signing key. Nested loops are the plan for
# the joins whatever the statistics say; with many tokens of one user (a
# service account) PostgreSQL's generic plan was a merge join that sorts the
# token and walks the user index from its start (docs/performance.md,
# "Inspect, counted"). Both are only discouraged: a plan without them is chosen.
PLANNER_OPTIONS = "-c enable_mergejoin=off -c enable_hashjoin=off"


@dataclass(frozen=True)
class _Prepared:
    """A read-only statement as read_one prepares it on PostgreSQL: ``$n`` placeholders, rows as named tuples."""

    name: bytes
    sql: bytes
    parameters: tuple[str, ...]
    row: type[tuple[Any, ...]]

    @classmethod
    def of(cls, statement: Select[Any], dialect: Any) -> _Prepared:
        # libpq's prepared statements take $n placeholders and a list of values.
        compiled = statement.compile(dialect=type(dialect)(paramstyle="numeric_dollar"))
        names = [str(column.key) for column in statement.selected_columns]
        return cls(
            f"authsvc_read_{next(_NAMES)}".encode(),  # psycopg's own are _pg3_N
            compiled.string.encode(),
            tuple(compiled.positiontup or ()),
            namedtuple("Row", names),
        )


# The statements read_one has run on PostgreSQL. They are module-level
# constants, so this holds a handful for the process's life.
_PREPARED: dict[Select[Any], _Prepared] = {}


def read_one(statement: Select[Any], params: dict[str, str | None], readers: Readers | None = None) -> Any:
    """The first row of a read-only ``statement`` (attribute access by column name), or None.

    For the one-row lookups of every API request and grant (authsvc.core.readers lists
    them); ``params`` are text. On
    PostgreSQL the statement runs on one of the app's readers (below): a
    prepared statement in autocommit, one round trip, with no ORM session or
    Core result machinery around it. A failure surfaces as SQLAlchemy's
    DBAPIError, so the 503 handling is the same as elsewhere. On other
    databases, or when the request's session is in a transaction already:
    the session's connection.
    ``readers``: for a caller outside an app context (authsvc.api.fastpath).
    A value with a NUL character matches no stored text: None, without a
    statement (libpq would end a text parameter at the NUL, and match its start).
    """
    if any(value is not None and "\x00" in value for value in params.values()):
        return None
    if readers is None:
        if in_transaction():
            # The request is in a transaction: read in it (a session in autocommit has none to join).
            return db.session.connection().execute(statement, params).one_or_none()
        readers = current_app.extensions.get(READERS)
        if readers is None:
            return db.session.connection().execute(statement, params).one_or_none()
    return readers.read(statement, params)


READERS = "authsvc.readers"


class _Disconnected(Exception):
    """A reader's connection is gone; ``error`` is what to raise if trying again does not help."""

    def __init__(self, error: DBAPIError):
        self.error = error


class Readers:
    """The app's reader connections: a psycopg_pool pool, in autocommit, each statement prepared.

    SQLAlchemy's pool checkout and return (with its reset) and switching
    autocommit on and off cost about the round trip of a lookup; connections
    kept in autocommit for lookups need none of it. Connected with the
    engine's URL and the same bounds (``connect_settings``); closed with the
    engine (``engine.dispose()``); recycled as the engine recycles its own.

    The statement goes through the connection's libpq wrapper
    (authsvc.core.readers.roundtrip), which waits at most the client deadline
    or what is left of the request's database budget (authsvc.core.budget),
    as does the wait for a connection. A connection found dead in use (a
    database restart) drains the pool, and the lookup gets one more try on a
    new connection. One whose wait passed its deadline (a hung server) is
    closed and not tried again: the request answers 503.
    A lookup interrupted by a signal (a worker timeout, Ctrl-C; a sync worker
    has one thread, which gets them) is cancelled on the server, and its
    connection closed. A forked child makes its own pool and leaves its
    parent's alone: closing it would end the parent's sessions. The sessions
    plan by nested loops only (PLANNER_OPTIONS).
    """

    SIZE = 8  # connections at most: as many lookups as run at once in a process

    def __init__(self, engine: Engine, settings: dict[str, Any], wait: float, deadline: float, recycle: float):
        # The engine's own reading of its URL (and its adapters), with the bounds on top.
        args, kwargs = engine.dialect.create_connect_args(engine.url)
        self.conninfo = args[0] if args else ""
        self.kwargs = {
            **kwargs,
            **settings,
            "options": " ".join(filter(None, (settings.get("options"), PLANNER_OPTIONS))),
            "autocommit": True,
        }
        self.wait = wait
        self.deadline = deadline
        self.recycle = recycle
        self.dialect = engine.dialect
        # The last failed attempt to connect (when, what), noted by the pool's
        # connection class: a request waiting for a connection fails as soon
        # as an attempt made while it waits fails, not after the whole wait.
        self.failure: tuple[float, psycopg.Error] | None = None
        readers = self

        class Connection(psycopg.Connection):
            @classmethod
            def connect(cls, *args: Any, **kwargs: Any) -> Any:
                try:
                    return super().connect(*args, **kwargs)
                except psycopg.Error as exc:
                    readers.failure = (time.monotonic(), exc)
                    raise

        self.connection_class = Connection
        # Each connection's prepared statements and loaders (authsvc.core.readers.roundtrip), gone with it.
        self._sessions: weakref.WeakKeyDictionary[psycopg.Connection, roundtrip.Session] = weakref.WeakKeyDictionary()
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()
        event.listen(engine, "engine_disposed", self.close)
        _LIVE.add(self)

    def _forked(self) -> None:
        """In a forked child: the parent's pool is left alone (closing it would end the parent's sessions)."""
        if self._pool is not None:
            _INHERITED.append(self._pool)  # kept, never closed or collected here
        self._pool = None
        self._lock = threading.Lock()  # another thread of the parent may have held it at the fork

    @property
    def pool(self) -> ConnectionPool:
        pool = self._pool
        if pool is None:  # the first lookup of this process
            with self._lock:
                if self._pool is None:
                    self._pool = ConnectionPool(
                        self.conninfo,
                        kwargs=self.kwargs,
                        connection_class=self.connection_class,
                        # None until the first lookup, then as many as run at once.
                        min_size=0,
                        max_size=self.SIZE,
                        num_workers=1,  # the thread that connects; a process needs no more
                        # A failed attempt is tried once more a second later, then
                        # left to the next lookup: no retries in the background
                        # that a request would wait behind after the database is back.
                        reconnect_timeout=0,
                        timeout=self.wait,
                        max_lifetime=self.recycle,
                        name="authsvc-readers",
                        open=True,
                    )
                pool = self._pool
        return pool

    def read(self, statement: Select[Any], params: dict[str, str | None]) -> Any:
        prepared = _PREPARED.get(statement)
        if prepared is None:
            prepared = _PREPARED[statement] = _Prepared.of(statement, self.dialect)
        values = [None if (value := params[name]) is None else value.encode() for name in prepared.parameters]
        for last in (False, True):
            try:
                return self._read(prepared, values)
            except _Disconnected as lost:
                if last:
                    raise lost.error from None
                # A database restart, say: every idle connection is as dead as this one.
                self.pool.drain()
        raise AssertionError("unreachable: the second try returns or raises")

    def _read(self, prepared: _Prepared, values: list[bytes | None]) -> Any:
        pool = self.pool
        started = time.monotonic()
        try:
            connection = self._connection(pool)
        except psycopg.Error as exc:  # no connection within the wait, or the database refused one
            budget.note_failure()
            raise self._error(prepared, values, exc, disconnected=False) from exc
        finally:
            budget.spend(time.monotonic() - started)
        started = time.monotonic()
        try:
            session = self._sessions.get(connection)
            if session is None:
                session = self._sessions[connection] = roundtrip.Session(connection)
            row = session.fetch_one(prepared.name, prepared.sql, values, budget.bounded(self.deadline))
        except roundtrip.TimedOut as exc:
            # A hung server: this connection is given up, and the request tries no other.
            budget.note_failure()
            connection.close()
            raise self._error(prepared, values, exc, disconnected=True) from exc
        except psycopg.Error as exc:
            # psycopg's exception and connection are the DB-API ones SQLAlchemy's dialect expects.
            disconnected = connection.closed or self.dialect.is_disconnect(exc, connection, None)  # type: ignore[arg-type]
            error = self._error(prepared, values, exc, disconnected)
            if disconnected:
                raise _Disconnected(error) from exc
            if isinstance(exc, psycopg.OperationalError):  # a statement timeout, a spent budget
                budget.note_failure()
            raise error from exc
        except BaseException:
            # Interrupted (a worker timeout, Ctrl-C): stop the statement on
            # the server, as psycopg does on Ctrl-C, and drop the connection.
            with contextlib.suppress(Exception):  # the interruption is what the caller must see
                connection.cancel_safe(timeout=2)
            connection.close()
            raise
        finally:
            pool.putconn(connection)  # a closed or broken connection is replaced by the pool
            budget.spend(time.monotonic() - started)
        return None if row is None else prepared.row._make(row)  # type: ignore[attr-defined]  # a namedtuple

    SLICE = 0.05  # seconds: how often a request waiting for a connection looks for a failed attempt

    def _connection(self, pool: ConnectionPool) -> psycopg.Connection:
        started = time.monotonic()
        deadline = started + budget.bounded(self.wait)
        while True:
            try:
                return pool.getconn(timeout=max(0.0, min(self.SLICE, deadline - time.monotonic())))
            except PoolTimeout:
                failure = self.failure
                if failure is not None and failure[0] >= started:
                    raise failure[1] from None
                if time.monotonic() >= deadline:
                    raise

    def _error(self, prepared: _Prepared, values: list[bytes | None], exc: Exception, disconnected: bool) -> DBAPIError:
        return DBAPIError.instance(  # type: ignore[return-value]  # a DBAPIError, since exc is a psycopg.Error
            prepared.sql.decode(), values, exc, psycopg.Error, connection_invalidated=disconnected, dialect=self.dialect
        )

    def close(self, *args: Any) -> None:
        if self._pool is not None:  # this process's own: a child drops its parent's at the fork
            self._pool.close()
        self._pool = None


# Pools inherited from a parent process: a child neither uses nor closes them.
_INHERITED: list[ConnectionPool] = []
# Every app's readers, told of a fork in the child (os.register_at_fork) instead
# of each lookup asking the kernel for the process id.
_LIVE: weakref.WeakSet[Readers] = weakref.WeakSet()


def _forked() -> None:
    for readers in list(_LIVE):
        readers._forked()


os.register_at_fork(after_in_child=_forked)


def init_app(app: Flask, engine: Engine) -> None:
    """On PostgreSQL, give the app its readers (after core.database.init_app bounded the engine)."""
    if engine.dialect.name != "postgresql":
        return
    deadline = client_deadline(settings(app))
    # psycopg_pool logs every checkout and return at INFO: three records per
    # inspect at the service's default level. Its warnings (failed connection
    # attempts, connections found broken) still show.
    logging.getLogger("psycopg.pool").setLevel(logging.WARNING)
    options = app.config.get("SQLALCHEMY_ENGINE_OPTIONS", {})
    app.extensions[READERS] = Readers(
        engine,
        # The engine's connect arguments: these bounds (create_app), and any the deployment adds.
        options.get("connect_args") or connect_settings(settings(app)),
        wait=settings(app).database_timeout,
        deadline=deadline,
        recycle=options.get("pool_recycle", 1800),
    )
