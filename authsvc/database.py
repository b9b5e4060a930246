"""The database handle, and how requests reach PostgreSQL cheaply.

``db`` is Flask-SQLAlchemy's handle (the models are in authsvc.models);
``read_one`` runs the lookups on every API request as prepared statements
outside any transaction, on connections kept for them (readers); ``ping_after_idle`` replaces pool_pre_ping's round
trip on every checkout with a ping only after idleness.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import Engine, Select, event
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass


db = SQLAlchemy(model_class=Base)


def now() -> int:
    return int(time.time())


# A pooled connection idle this long is pinged before it is used again: one
# that died meanwhile (a database restart, a proxy's idle timeout) is replaced
# instead of failing the request. A busy connection is not pinged, which saves
# the round trip that pool_pre_ping made on every request.
PING_AFTER_IDLE = 5.0


def ping_after_idle(engine: Engine, idle: float = PING_AFTER_IDLE) -> None:
    """Make ``engine``'s pool ping connections that sat unused longer than ``idle`` seconds."""

    @event.listens_for(engine.pool, "checkin")
    def note_idle(dbapi_connection: Any, record: Any) -> None:
        record.info["authsvc_idle_since"] = time.monotonic()

    @event.listens_for(engine.pool, "checkout")
    def ping_if_idle(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.get("authsvc_idle_since")
        if since is None or time.monotonic() - since <= idle:
            return
        dialect = engine.dialect
        try:
            alive = dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            # psycopg raises on a dead connection rather than answering False.
            if not dialect.is_disconnect(exc, dbapi_connection, None):
                raise
            alive = False
        if not alive:
            # The pool replaces the connection and tries again.
            raise DisconnectionError("the connection died while idle")


def without_transaction() -> None:
    """Run the rest of this request's statements in autocommit mode.

    For requests that only read (or write one row): no BEGIN and ROLLBACK
    round trips around them, and psycopg keeps its prepared statements, which
    it drops at every ROLLBACK. Only before the session's first statement; a
    session already in a transaction keeps it.
    """
    if not db.session().in_transaction():
        db.session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


@dataclass(frozen=True)
class _Prepared:
    """A read-only statement as read_one sends it to PostgreSQL: ``$n`` placeholders, rows as named tuples."""

    sql: str
    parameters: tuple[str, ...]
    row: type

    @classmethod
    def of(cls, statement: Select, dialect: Any) -> _Prepared:
        # psycopg's RawCursor takes $n placeholders and a tuple, and so skips
        # converting %(name)s placeholders and a dictionary on every execution.
        compiled = statement.compile(dialect=type(dialect)(paramstyle="numeric_dollar"))
        names = [column.key for column in statement.selected_columns]
        return cls(compiled.string, tuple(compiled.positiontup or ()), namedtuple("Row", names))


# The statements read_one has run on PostgreSQL. They are module-level
# constants, so this holds a handful for the process's life.
_PREPARED: dict[Select, _Prepared] = {}


def read_one(statement: Select, params: dict[str, str | None], engine: Engine | None = None) -> Any:
    """The first row of a read-only ``statement`` (attribute access by column name), or None.

    For the lookups on every API request (inspect); ``params`` are text. On
    PostgreSQL the statement runs on one of the engine's readers (below): a
    prepared statement in autocommit, one round trip, neither parsed nor
    planned again, with no pool, ORM session or Core result machinery around
    it. A failure surfaces as SQLAlchemy's DBAPIError, so the 503 handling is
    the same as elsewhere. On other databases, or when the request's session
    is in a transaction already: the session's connection.
    ``engine``: for a caller outside an app context (authsvc.fastpath).
    """
    if engine is None:
        engine = db.engine
        if db.session().in_transaction():
            # The request holds a connection already: use it, not a second one.
            return db.session.connection().execute(statement, params).one_or_none()
    if engine.dialect.name != "postgresql":
        return db.session.connection().execute(statement, params).one_or_none()
    prepared = _PREPARED.get(statement)
    if prepared is None:
        prepared = _PREPARED[statement] = _Prepared.of(statement, engine.dialect)
    values = [params[name] for name in prepared.parameters]
    readers = _readers_of(engine)
    for fresh in (False, True):
        reader = readers.take(fresh)
        try:
            return reader.read(prepared, values)
        except _Disconnected as lost:
            # A database restart, say: as Core does on a disconnect, every
            # connection made before now is dropped, the pool's and the other
            # readers', and this read-only lookup gets one more try on a new one.
            engine.pool._invalidate(None)  # type: ignore[arg-type]
            if fresh:
                raise lost.error from None
        finally:
            readers.give_back(reader)
    raise AssertionError("unreachable: the second try returns or raises")


class _Disconnected(Exception):
    """A reader's connection is gone; ``error`` is what to raise if trying again does not help."""

    def __init__(self, error: DBAPIError):
        self.error = error


# psycopg's own wait for a result wakes this often (seconds) to look for
# signals; without an interval it would poll the socket in a busy loop.
_WAIT_INTERVAL = 0.1
# libpq's ExecStatus values (psycopg.pq.ExecStatus), here so that a process on SQLite does not import psycopg.
_COMMAND_OK, _TUPLES_OK = 1, 2


class _Reader:
    """One autocommit PostgreSQL connection, and the statements prepared on it.

    psycopg's cursor, SQLAlchemy's pool checkout and return (with its reset),
    and switching autocommit on and off cost about twice the round trip of a
    lookup; a connection kept in autocommit for lookups only needs none of it.
    The statement goes to libpq directly (``send_query_prepared``), its row
    through psycopg's own loaders. psycopg's wait stays interruptible: in a
    sync worker (one thread) a timeout or Ctrl-C ends a lookup that waits on a
    lock, and cancels it. A request thread of a threaded worker gets no signals.
    """

    def __init__(self, engine: Engine, generation: int):
        import psycopg  # here, so that a process on SQLite does not load the PostgreSQL driver
        from psycopg import generators, waiting
        from psycopg.adapt import Transformer

        self.engine = engine
        self.generation = generation
        try:
            # Through the pool, for the engine's connect arguments and events,
            # then out of it: this connection is the readers' alone.
            pooled = engine.raw_connection()
        except psycopg.Error as exc:  # the pool wraps nothing here, unlike engine.connect()
            raise DBAPIError.instance(None, None, exc, psycopg.Error, dialect=engine.dialect) from exc
        record = pooled._connection_record
        self.connected_at = record.starttime if record is not None else time.time()
        self.connection: Any = pooled.driver_connection
        pooled.detach()
        try:
            self.connection.autocommit = True
            self.pgconn = self.connection.pgconn
            self.encoding = self.connection.info.encoding
            self.transformer = Transformer(self.connection)
        except BaseException as exc:
            self.connection.close()  # out of the pool now: nobody else would
            if isinstance(exc, psycopg.Error):
                raise DBAPIError.instance(None, None, exc, psycopg.Error, dialect=engine.dialect) from exc
            raise
        self.names: dict[_Prepared, bytes] = {}
        self.broken = False
        self.errors = psycopg.errors
        self._execute = generators.execute
        self._wait = waiting.wait

    def read(self, prepared: _Prepared, values: list[str | None]) -> Any:
        try:
            return self._read(prepared, values)
        except self.errors.Error as exc:
            dialect = self.engine.dialect
            disconnected = self.connection.closed or dialect.is_disconnect(exc, self.connection, None)
            if disconnected or not isinstance(exc, self.errors.DataError):
                self.broken = True
            error = DBAPIError.instance(
                prepared.sql, values, exc, self.errors.Error, connection_invalidated=disconnected, dialect=dialect
            )
            if disconnected:
                raise _Disconnected(error) from exc
            raise error from exc
        except BaseException:
            # Interrupted (a worker timeout, Ctrl-C): stop the statement, as
            # psycopg's cursor does, and never reuse this connection.
            self.broken = True
            with contextlib.suppress(Exception):  # the interruption is what the caller must see
                self.connection.cancel_safe(timeout=2)
            raise

    def _read(self, prepared: _Prepared, values: list[str | None]) -> Any:
        try:
            encoded = [value.encode(self.encoding) if value is not None else None for value in values]
        except UnicodeEncodeError as exc:
            raise self.errors.DataError(f"a parameter cannot be sent in {self.encoding}") from exc
        for value in encoded:
            if value and b"\x00" in value:  # as psycopg refuses it: libpq would cut the text short
                raise self.errors.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        name = self.names.get(prepared) or self._prepare(prepared)
        self.pgconn.send_query_prepared(name, encoded)
        result = self._result(_TUPLES_OK)
        if not result.ntuples:
            return None
        self.transformer.set_pgresult(result)
        return self.transformer.load_row(0, prepared.row._make)

    def _prepare(self, prepared: _Prepared) -> bytes:
        name = f"authsvc_{len(self.names)}".encode()
        self.pgconn.send_prepare(name, prepared.sql.encode(), None)
        self._result(_COMMAND_OK)
        self.names[prepared] = name
        return name

    def _result(self, expected: int) -> Any:
        """The answer to what was just sent, awaited through psycopg; an error unless its status is ``expected``."""
        result = self._wait(self._execute(self.pgconn), self.pgconn.socket, interval=_WAIT_INTERVAL)[-1]
        if result.status != expected:
            raise self.errors.error_from_result(result, encoding=self.encoding)
        return result

    def close(self) -> None:
        self.connection.close()


class _Readers:
    """The readers of one engine: as many connections as lookups run at once in the process.

    A free list rather than one connection per thread, so that a server that
    starts a thread per request (``flask run``) does not open a connection
    per request. Closed with the engine (``engine.dispose()``); recycled as the
    engine's pool recycles its connections. A forked child starts with none,
    and leaves its parent's alone: closing them would end the parent's
    sessions on the server.
    """

    KEEP = 8  # idle readers kept; more are closed on return

    def __init__(self, engine: Engine):
        self.engine = engine
        self.idle: list[_Reader] = []
        self.generation = 0
        self.pid = os.getpid()
        event.listen(engine, "engine_disposed", self.close_all)

    def take(self, fresh: bool = False) -> _Reader:
        if self.pid != os.getpid():
            self._forget_inherited()
        pool = self.engine.pool
        while self.idle and not fresh:
            try:
                reader = self.idle.pop()
            except IndexError:  # another thread took the last one
                break
            if reader.generation == self.generation and self._current(reader, pool):
                return reader
            reader.close()
        return _Reader(self.engine, self.generation)

    @staticmethod
    def _current(reader: _Reader, pool: Any) -> bool:
        # As the pool judges its own connections: not older than its recycle
        # time, nor than its last invalidation (a disconnect seen anywhere).
        connected = reader.connected_at
        return connected > pool._invalidate_time and (pool._recycle < 0 or time.time() - connected < pool._recycle)

    def give_back(self, reader: _Reader) -> None:
        if reader.broken or reader.generation != self.generation or len(self.idle) >= self.KEEP:
            reader.close()
        else:
            self.idle.append(reader)

    def close_all(self, *args: Any) -> None:
        if self.pid != os.getpid():
            self._forget_inherited()
            return
        self.generation += 1
        while self.idle:
            try:
                self.idle.pop().close()
            except IndexError:
                break

    def _forget_inherited(self) -> None:
        # Dropped, not closed: psycopg does not end another process's session
        # when it collects a connection.
        self.idle = []
        self.generation += 1
        self.pid = os.getpid()


def _readers_of(engine: Engine) -> _Readers:
    # Kept on the engine: they live and go with it. Two threads that race here
    # each make one; the loser's are closed with the engine.
    readers = engine.__dict__.get("_authsvc_readers")
    if readers is None:
        readers = engine._authsvc_readers = _Readers(engine)  # type: ignore[attr-defined]
    return readers
