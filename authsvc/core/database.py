"""The database handle, and how requests reach PostgreSQL cheaply and never wait unbounded.

``db`` is Flask-SQLAlchemy's handle (the models are in authsvc.core.models).
The lookups on every API request (inspect) run as prepared statements in
autocommit, on connections of their own: ``read_one`` and ``Readers`` (a
psycopg_pool pool) in authsvc.core.readers.pool. ``ping_after_idle``
replaces pool_pre_ping's round trip on every checkout with a ping only after
idleness. ``connect_settings`` and
``bound_waits`` keep every wait on PostgreSQL below gunicorn's worker timeout:
a database that stops answering costs a request a 503, not the worker.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import threading
import time
import weakref
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, cast

import psycopg
from flask import Flask
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import ColumnElement, CursorResult, Engine, Result, Select, any_, event, func
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.orm import DeclarativeBase, InstrumentedAttribute, Session, SessionTransaction

from authsvc.core import budget, clock
from authsvc.core.settings import settings as typed_settings

if TYPE_CHECKING:
    from config.settings import Settings

log = logging.getLogger(__name__)


class Base(DeclarativeBase):
    pass


db = SQLAlchemy(model_class=Base)

# The models' base class. Flask-SQLAlchemy makes db.Model from Base at run time (adding the
# table names and the session's query), which a type checker cannot follow: to it, Model is Base.
if TYPE_CHECKING:
    Model = Base
else:
    Model = db.Model

# The table arguments of a table whose ids name something outside the database (a token's ``sub``,
# SCIM and admin API ids, audit targets): SQLite gives a rowid table's new row the id after the
# largest, so after the newest row is deleted its id would name someone else. AUTOINCREMENT never
# hands out an id twice; PostgreSQL's sequences never do anyway (docs/security.md, "Ids").
IDS_NEVER_REUSED: dict[str, Any] = {"sqlite_autoincrement": True}


def rows_affected(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE matched (SQLAlchemy types execute()'s answer as a plain Result)."""
    return cast(CursorResult[Any], result).rowcount


def among(column: InstrumentedAttribute[Any], rows: Select[Any]) -> ColumnElement[bool]:
    """``column IN (rows)``, written so that PostgreSQL finds a batch's rows by ``column``'s index.

    For ``IN (subquery)`` PostgreSQL may join the subquery's rows to the table,
    and on a table of tens of thousands of rows it chose a hash join over a
    scan of the whole table; ``= ANY(ARRAY(subquery))`` runs the subquery once
    and looks each of its rows up. SQLite plans ``IN`` so already.
    """
    if db.session.get_bind().dialect.name == "postgresql":
        return column == any_(func.array(rows.scalar_subquery()))
    return column.in_(rows.scalar_subquery())


def now() -> int:
    """Whole seconds since the epoch, by the service's clock (authsvc.core.clock)."""
    return clock.now()


# A pooled connection idle this long is pinged before it is used again: one
# that died meanwhile (a database restart, a proxy's idle timeout) is replaced
# instead of failing the request. A busy connection is not pinged, which saves
# the round trip that pool_pre_ping made on every request.
PING_AFTER_IDLE = 5.0


def ping_after_idle(engine: Engine, idle: float = PING_AFTER_IDLE, deadline: float | None = None) -> None:
    """Make ``engine``'s pool ping connections that sat unused longer than ``idle`` seconds.

    ``deadline``: seconds the ping may wait for its answer (see Watchdog).
    """

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
            wait = None if deadline is None else budget.bounded(deadline)
        except budget.BudgetSpent:
            return  # the request's next statement fails at once, on a connection that may well be fine
        in_time = True
        started = time.monotonic()
        try:
            if wait is not None:
                WATCHDOG.start(dbapi_connection, dbapi_connection, wait)
            try:
                alive = dialect.do_ping(dbapi_connection)
            finally:
                if wait is not None:
                    in_time = WATCHDOG.end(dbapi_connection)
                budget.spend(time.monotonic() - started)
        except dialect.loaded_dbapi.Error as exc:
            # psycopg raises on a dead connection rather than answering False.
            if not dialect.is_disconnect(exc, dbapi_connection, None):
                raise
            alive = False
        if not in_time:
            # A hung server, not a connection that died while idle: no new connection is tried for this request.
            budget.note_failure()
        if not alive:
            # The pool replaces the connection and tries again.
            raise DisconnectionError("the connection died while idle")


_CONNECTED = "authsvc.connected"
AUTOCOMMIT = "autocommit"
TRANSACTION = "transaction"


@event.listens_for(Session, "after_begin")
def _note_connected(session: Session, transaction: SessionTransaction, connection: Any) -> None:
    root = transaction
    while root.parent is not None:
        root = root.parent
    mode = AUTOCOMMIT if connection.get_execution_options().get("isolation_level") == "AUTOCOMMIT" else TRANSACTION
    session.info[_CONNECTED] = (weakref.ref(root), mode)


def session_connection() -> str | None:
    """How this request's session runs its next statement: None when it has no connection yet (it may still
    choose autocommit), ``AUTOCOMMIT``, or ``TRANSACTION`` (in a database transaction of its own).

    Not ``Session.in_transaction()``: adding an entity begins the session's
    transaction (autobegin) without a connection, and nothing has been sent to
    the database (authsvc.core.readers.entities adds the rows it read on a reader so).
    """
    session = db.session()
    transaction = session.get_transaction()
    connected = session.info.get(_CONNECTED)
    if transaction is None or connected is None or connected[0]() is not transaction:
        return None
    return cast(str, connected[1])


def in_transaction() -> bool:
    """Whether this request's session is in a database transaction: a read must join it, to see its writes."""
    return session_connection() == TRANSACTION


def without_transaction() -> None:
    """Run the rest of this request's statements in autocommit mode.

    For requests that only read (or write one row): no BEGIN and ROLLBACK
    round trips around them, and psycopg keeps its prepared statements, which
    it drops at every ROLLBACK. Only before the session's first statement; a
    session already in a transaction keeps it.
    """
    if session_connection() is None:
        db.session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


def commit_keeping_loaded() -> None:
    """Commit without expiring what the session loaded: the rest of the request reads it without a SELECT.

    For a commit near the end of a request that wrote rows of its own (a
    token) and goes on to read the records it loaded before (the client, the
    user, for an ID token): they are as this request read them.
    """
    session = db.session()
    expire, session.expire_on_commit = session.expire_on_commit, False
    try:
        session.commit()
    finally:
        session.expire_on_commit = expire


# ----------------------------------------------------------------- bounds


def connect_settings(settings: Settings) -> dict[str, Any]:
    """libpq connection parameters that bound every wait on PostgreSQL, for the engine and the readers.

    ``connect_timeout`` bounds connecting; ``statement_timeout`` makes the
    server end a statement that runs (or waits on a lock) too long; TCP
    keepalives and ``tcp_user_timeout`` make the kernel drop a connection
    whose packets go unanswered (a dead host, a dropped route), idle or not.
    A server that still acknowledges packets but never answers is the
    Watchdog's (below).
    """
    statement_ms = int(settings.statement_timeout * 1000)
    return {
        "connect_timeout": max(2, round(settings.database_timeout)),  # libpq's least is 2
        "options": f"-c statement_timeout={statement_ms}",
        "keepalives": 1,
        "keepalives_idle": 30,
        "keepalives_interval": 5,
        "keepalives_count": 3,
        "tcp_user_timeout": statement_ms,
    }


def client_deadline(settings: Settings) -> float:
    """Seconds the service waits for one answer of PostgreSQL: the server's own timeout, and one more."""
    return settings.statement_timeout + 1.0


class Watchdog:
    """Ends waits on PostgreSQL that outlast their deadline, by shutting the connection's socket.

    psycopg waits for an answer as long as it takes, and a server (or a
    proxy, or a frozen VM) that still acknowledges packets but never answers
    defeats TCP keepalives and ``tcp_user_timeout``: the worker hangs until
    gunicorn kills it. A wait is registered (``start``) for its length;
    one thread per process looks at the registered waits a few times a
    second and shuts down the socket of one past its deadline, which makes
    libpq's wait end at once with "server closed the connection", a
    disconnect that the request answers with a 503. The lock makes sure that
    a socket is shut only while its wait is still registered, so never one
    that has moved on (or whose descriptor was reused).
    """

    TICK = 0.1  # seconds between looks; a deadline is met this late at most

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waits: dict[Hashable, tuple[float, psycopg.Connection]] = {}
        self._ended: set[Hashable] = set()
        self._pid = 0

    def start(self, key: Hashable, connection: Any, seconds: float) -> None:
        if self._pid != os.getpid():
            self._start_thread()
        with self._lock:
            self._waits[key] = (time.monotonic() + seconds, connection)

    def end(self, key: Hashable) -> bool:
        """Stop watching ``key``; False if its deadline had passed and its socket was shut."""
        with self._lock:
            if self._waits.pop(key, None) is not None:
                return True
            if key in self._ended:
                self._ended.discard(key)
                return False
            return True

    def _start_thread(self) -> None:
        # Here, not at import: a forked worker has its own thread (threads do not survive a fork).
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._waits.clear()
            self._ended.clear()
        threading.Thread(target=self._run, name="authsvc-database-watchdog", daemon=True).start()

    def _run(self) -> None:
        while True:
            time.sleep(self.TICK)
            now = time.monotonic()
            with self._lock:
                for key, (deadline, connection) in list(self._waits.items()):
                    if now >= deadline:
                        del self._waits[key]
                        self._ended.add(key)
                        self._shut(connection)

    @staticmethod
    def _shut(connection: Any) -> None:
        log.warning("a database wait passed its deadline; closing its connection")
        with contextlib.suppress(Exception):  # closed meanwhile: nothing left to end
            # A duplicate of the descriptor: shutdown acts on the socket both share, close only on the copy.
            with socket.socket(fileno=os.dup(connection.fileno())) as sock:
                sock.shutdown(socket.SHUT_RDWR)


WATCHDOG = Watchdog()

# Execution option that exempts a connection from the deadline (the migrations: an index build may take long).
UNBOUNDED = "authsvc_unbounded"


# Where a statement's start is kept (the connection's info) until its wait is taken off the request's budget.
_STARTED = "authsvc_statement_started"


def _spent(conn: Any) -> None:
    started = conn.info.pop(_STARTED, None)
    if started is not None:
        budget.spend(time.monotonic() - started)


def bound_waits(engine: Engine, seconds: float) -> None:
    """Put every statement ``engine`` runs under the Watchdog, through SQLAlchemy's cursor events.

    A statement waits ``seconds`` at most, or what is left of the request's
    database budget (authsvc.core.budget); connecting too. With the budget
    spent, or after a wait that failed, a statement fails without a wait.
    """

    @event.listens_for(engine, "do_connect")
    def connect(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        if budget.current() is None:
            return None  # SQLAlchemy connects as configured
        # libpq's connect_timeout is whole seconds, 2 at least. cparams is the engine's own
        # dictionary, kept for every later connection: the bound goes on a copy.
        timeout = max(2, math.ceil(budget.bounded(cparams.get("connect_timeout", seconds))))
        started = time.monotonic()
        try:
            return dialect.connect(*cargs, **{**cparams, "connect_timeout": timeout})
        except psycopg.OperationalError:
            budget.note_failure()
            raise
        finally:
            budget.spend(time.monotonic() - started)

    @event.listens_for(engine, "before_cursor_execute")
    def watch(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if not conn.get_execution_options().get(UNBOUNDED):
            WATCHDOG.start(cursor, cursor.connection, budget.bounded(seconds))
            conn.info[_STARTED] = time.monotonic()

    @event.listens_for(engine, "after_cursor_execute")
    def done(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        WATCHDOG.end(cursor)
        _spent(conn)

    @event.listens_for(engine, "handle_error")
    def failed(context: Any) -> None:
        cursor = getattr(context.execution_context, "cursor", None)  # none before a statement ran
        if cursor is not None:
            WATCHDOG.end(cursor)
        if context.connection is not None:
            _spent(context.connection)
        if isinstance(context.original_exception, psycopg.errors.ReadOnlySqlTransaction):
            # A primary that became a standby (a failover): every pooled connection leads there, so
            # the pool is dropped and new connections find the new primary (target_session_attrs).
            context.is_disconnect = True
        if context.is_disconnect or isinstance(context.original_exception, psycopg.OperationalError):
            # Lost, timed out or cancelled: the database is not answering this request in time.
            budget.note_failure()


def end_sessions_quietly(app: Flask) -> None:
    """End each request's session so that a server lost after the answer was made cannot turn it into a 500.

    Flask-SQLAlchemy removes the session at teardown, which rolls back its open
    transaction; when the server died meanwhile (a failover, a restart) that
    rollback raises outside every error handler, and gunicorn answers 500
    instead of the response already made. Registered after Flask-SQLAlchemy's
    teardown, this one runs first (Flask runs them in reverse): on such an
    error it invalidates the connection (not returned to the pool) and clears
    the session, so the answer stands and the next request reconnects.
    """

    @app.teardown_appcontext
    def remove_session(exc: BaseException | None) -> None:
        try:
            db.session.remove()
        except DBAPIError as error:
            log.warning("database connection lost at the end of a request: %s", error.orig.__class__.__name__)
            with contextlib.suppress(Exception):  # nothing is sent to the server: the connection is dropped
                db.session().invalidate()
            db.session.registry.clear()


def init_app(app: Flask, engine: Engine) -> None:
    """Bound ``engine``'s waits (on PostgreSQL, every one of them)."""
    deadline = client_deadline(typed_settings(app))
    ping_after_idle(engine, deadline=deadline if engine.dialect.name == "postgresql" else None)
    if engine.dialect.name == "postgresql":
        bound_waits(engine, deadline)
