"""Counting what a request costs in round trips: SQL statements and Redis commands, on the real servers.

SQL statements are counted with SQLAlchemy's ``before_cursor_execute`` event
on every engine of the app, and those of inspect's readers (the prepared
statements that authsvc.core.readers.roundtrip sends through libpq, past SQLAlchemy)
as each is sent. On PostgreSQL the transaction's own round trips are counted
too (``sql_trips``): the BEGIN that psycopg sends before a statement when
its connection is neither in autocommit nor in a transaction, and the COMMIT
or ROLLBACK that a connection in a transaction sends (SQLAlchemy's ``commit``
and ``rollback`` events, and the pool's ``reset`` of a returned connection).
Not counted: a statement's preparation the first time a connection runs it
(the readers' PREPARE, psycopg's own) and the ping of a connection idle for
a while; the counted request is the second of its kind, on warm connections.
Redis round trips are counted on the app's own client: each
``send_packed_command`` of its connection class is one trip to the server
(a pipeline or a transaction's ``EXEC`` is one; each ``WATCH`` is one). The
commands still run on the real server (Redis, or the in-process store of
the SQLite pass); nothing is replaced. Only the calling thread's work is
counted: the background queue's threads (audit publishing, say) are off the
request path.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import psycopg
import pytest
from flask import Flask
from sqlalchemy import event

from authsvc.app.limits import PREFIX as LIMITER_PREFIX
from authsvc.core.database import db
from authsvc.core.readers import roundtrip

# A connection's upkeep, not a request's: the handshake of a new pooled connection
# (CLIENT SETINFO, AUTH, SELECT, HELLO) and redis-py's health check of an idle one (PING).
UPKEEP = frozenset({"CLIENT", "AUTH", "SELECT", "HELLO", "PING"})


@dataclass
class Trips:
    sql: list[str] = field(default_factory=list)
    redis: list[str] = field(default_factory=list)
    # The statements' first words in order, with BEGIN, COMMIT and ROLLBACK on PostgreSQL (see above).
    trips: list[str] = field(default_factory=list)

    def sql_verbs(self) -> list[str]:
        """The statements' first words, e.g. ``["SELECT", "INSERT", "UPDATE"]``."""
        return [statement.split(None, 1)[0].upper() for statement in self.sql]

    def sql_trips(self) -> list[str]:
        """The statements with their transaction control, in order: ``["SELECT", "BEGIN", "UPDATE", "COMMIT"]``."""
        return list(self.trips)

    def store(self) -> list[str]:
        """The service's own Redis round trips, by command name (the rate limiter's, on the same pool, apart)."""
        return [c.split()[0] for c in self.redis if not _limiter(c) and c.split()[0] not in UPKEEP]

    def limiter(self) -> int:
        """The rate limiter's round trips (PostgreSQL pass: it shares our Redis; SQLite pass: in memory)."""
        return sum(_limiter(c) for c in self.redis)

    def __str__(self) -> str:
        return "SQL:\n  " + "\n  ".join(self.sql) + "\nRedis: " + " ".join(self.redis)


def _limiter(command: str) -> bool:
    # Flask-Limiter's keys are "<prefix>:{LIMITER/...}" (the lockouts' own keys, "<prefix>:failures:...", are ours).
    return f"{LIMITER_PREFIX}:{{LIMITER/" in command


def _in_transaction(dbapi_connection: object) -> bool:
    """Whether a psycopg connection is in a transaction (its COMMIT or ROLLBACK is a round trip); False on SQLite."""
    if not isinstance(dbapi_connection, psycopg.Connection):
        return False
    return dbapi_connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE


def _begins(dbapi_connection: object) -> bool:
    """Whether psycopg sends BEGIN before the statement about to run on this connection."""
    return (
        isinstance(dbapi_connection, psycopg.Connection)
        and not dbapi_connection.autocommit
        and dbapi_connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    )


def _command(packed: object) -> str:
    """The first command of a packed request, with its first arguments: ``"GET authsvc:session:..."``."""
    chunks = packed if isinstance(packed, list | tuple) else [packed]
    data = b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)
    # RESP: *<n>\r\n$<len>\r\nNAME\r\n$<len>\r\nARG\r\n...
    parts = data.split(b"\r\n")
    words = [parts[i].decode(errors="replace") for i in range(2, min(len(parts), 9), 2)]
    return " ".join([words[0].upper(), *words[1:]]) if words else "?"


@contextmanager
def trips(app: Flask, monkeypatch: pytest.MonkeyPatch) -> Iterator[Trips]:
    """Count the SQL statements and Redis round trips this thread makes inside the block."""
    counted = Trips()
    thread = threading.get_ident()
    connection_class = app.extensions["authsvc.redis"].connection_pool.connection_class
    send = connection_class.send_packed_command

    def send_packed_command(self, command, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if threading.get_ident() == thread:
            counted.redis.append(_command(command))
        return send(self, command, *args, **kwargs)

    monkeypatch.setattr(connection_class, "send_packed_command", send_packed_command)
    fetch_one = roundtrip.Session.fetch_one

    def counted_fetch_one(self, name, sql, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if threading.get_ident() == thread:
            counted.sql.append(" ".join(sql.decode().split()))
            counted.trips.append(sql.decode().split(None, 1)[0].upper())
        return fetch_one(self, name, sql, *args, **kwargs)

    monkeypatch.setattr(roundtrip.Session, "fetch_one", counted_fetch_one)
    with app.app_context():
        engines = list(db.engines.values())
    try:
        with _sql_events(engines, thread, counted):
            yield counted
    finally:
        monkeypatch.setattr(connection_class, "send_packed_command", send)
        monkeypatch.setattr(roundtrip.Session, "fetch_one", fetch_one)


@contextmanager
def _sql_events(engines: list, thread: int, counted: Trips) -> Iterator[None]:
    """Count the statements that SQLAlchemy runs for ``thread`` on ``engines``, with their BEGIN, COMMIT and
    ROLLBACK round trips."""

    def on_statement(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        if threading.get_ident() == thread:
            if _begins(conn.connection.dbapi_connection):
                counted.trips.append("BEGIN")
            counted.sql.append(" ".join(statement.split()))
            counted.trips.append(statement.split(None, 1)[0].upper())

    def on_end(name: str):  # noqa: ANN202
        def ended(conn) -> None:  # noqa: ANN001
            if threading.get_ident() == thread and _in_transaction(conn.connection.dbapi_connection):
                counted.trips.append(name)

        return ended

    def on_reset(dbapi_connection, record, state) -> None:  # noqa: ANN001
        if threading.get_ident() == thread and _in_transaction(dbapi_connection):
            counted.trips.append("ROLLBACK")

    commit, rollback = on_end("COMMIT"), on_end("ROLLBACK")
    listeners = [
        listener
        for engine in engines
        for listener in (
            (engine, "before_cursor_execute", on_statement),
            (engine, "commit", commit),
            (engine, "rollback", rollback),
            (engine.pool, "reset", on_reset),
        )
    ]
    for target, name, function in listeners:
        event.listen(target, name, function)
    try:
        yield
    finally:
        for target, name, function in listeners:
            event.remove(target, name, function)
