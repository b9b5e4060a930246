"""The database handle, and how requests reach PostgreSQL cheaply.

``db`` is Flask-SQLAlchemy's handle (the models are in authsvc.models);
``read_one`` runs the lookups on every API request as prepared statements
outside any transaction; ``ping_after_idle`` replaces pool_pre_ping's round
trip on every checkout with a ping only after idleness.
"""

from __future__ import annotations

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


def read_one(statement: Select, params: dict[str, Any], engine: Engine | None = None) -> Any:
    """The first row of a read-only ``statement`` (attribute access by column name), or None.

    For the lookups on every API request (inspect). On PostgreSQL the statement
    runs on a pooled connection in autocommit (no BEGIN or ROLLBACK round trip)
    as a server-side prepared statement, which psycopg keeps per connection:
    one round trip, neither parsed nor planned again, and no ORM session or
    Core result machinery around it. The pool's checkout events (the ping after
    idle) still apply, and a failure surfaces as SQLAlchemy's DBAPIError, so the
    503 handling is the same as elsewhere. On other databases, or when the
    request's session is in a transaction already: the session's connection.
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
    values = tuple(params[name] for name in prepared.parameters)
    import psycopg  # here, so that a process on SQLite does not load the PostgreSQL driver

    try:
        connection = engine.raw_connection()
    except psycopg.Error as exc:  # cannot connect: the pool wraps nothing here, unlike engine.connect()
        raise DBAPIError.instance(prepared.sql, values, exc, psycopg.Error, dialect=engine.dialect) from exc
    driver = connection.driver_connection
    returned = False
    try:
        driver.autocommit = True
        with psycopg.RawCursor(driver) as cursor:
            cursor.execute(prepared.sql, values, prepare=True)
            row = cursor.fetchone()
        driver.autocommit = False
        returned = True
        return prepared.row._make(row) if row is not None else None
    except psycopg.Error as exc:
        disconnected = driver.closed or engine.dialect.is_disconnect(exc, driver, None)
        if disconnected:
            # As Core does on a disconnect: every connection the pool holds
            # is as dead as this one (a database restart), so all are replaced.
            engine.pool._invalidate(connection, exc)
        raise DBAPIError.instance(
            prepared.sql, values, exc, psycopg.Error, connection_invalidated=disconnected, dialect=engine.dialect
        ) from exc
    finally:
        if not returned and connection.dbapi_connection is not None:
            # Whatever stopped it (an error, a timeout, an interrupt), this
            # connection may be in autocommit or mid-statement: never reuse it.
            connection.invalidate()
        connection.close()
