"""One prepared statement's round trip through psycopg's libpq wrapper (``Connection.pgconn``), with a deadline.

The readers (authsvc.core.readers.pool) run every statement through it:
inspect runs one read-only statement per request, and psycopg's
``cursor.execute`` around it cost about 54 us of client CPU against 29 us
for the same round trip through the connection's ``pgconn`` (the public,
documented libpq wrapper: ``psycopg.pq``): about half of inspect's worker
time went to the cursor's machinery. ``Session`` keeps, per connection, the
statements it prepared and their columns' loaders (psycopg's own, from the
connection's adapters), sends the execution, waits for the answer in
``poll`` with a deadline and loads the first row.

The wait is in Python (``select.poll``), not in libpq: a signal (gunicorn's
worker timeout, Ctrl-C) interrupts it, and a server that does not answer
within the deadline gives ``TimedOut`` without a watchdog thread.
"""

from __future__ import annotations

import select
import time
from typing import Any

import psycopg
from psycopg import errors, pq
from psycopg.abc import Loader

_OK = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
_UNKNOWN_OID = 0  # psycopg's loader of last resort: text


class TimedOut(psycopg.OperationalError):
    """The server did not answer within the deadline: the connection is no longer usable."""


class Session:
    """A connection's prepared statements and their loaders; not for use by two threads at once."""

    __slots__ = ("connection", "pgconn", "loaders", "poll")

    def __init__(self, connection: psycopg.Connection):
        self.connection = connection
        self.pgconn = connection.pgconn
        # Statement name -> its columns' loaders (None until its first answer).
        self.loaders: dict[bytes, list[Loader] | None] = {}
        self.poll = select.poll()
        self.poll.register(self.pgconn.socket, select.POLLIN)

    def fetch_one(self, name: bytes, sql: bytes, values: list[bytes | None], seconds: float) -> tuple[Any, ...] | None:
        """The first row of prepared statement ``name`` (``sql``) run with ``values``, or None."""
        ends = time.monotonic() + seconds
        pgconn = self.pgconn
        if name not in self.loaders:
            pgconn.send_prepare(name, sql)
            self._check(self._result(ends))
            self.loaders[name] = None
        pgconn.send_query_prepared(name, values)
        result = self._check(self._result(ends), name)
        if not result.ntuples:
            return None
        loaders = self.loaders[name]
        if loaders is None:
            loaders = self.loaders[name] = self._loaders(result)
        row = []
        for column, loader in enumerate(loaders):
            value = result.get_value(0, column)
            row.append(None if value is None else loader.load(value))
        return tuple(row)

    def _loaders(self, result: pq.abc.PGresult) -> list[Loader]:
        adapters = self.connection.adapters
        loaders = []
        for column in range(result.nfields):
            oid = result.ftype(column)
            cls = adapters.get_loader(oid, pq.Format.TEXT) or adapters.get_loader(_UNKNOWN_OID, pq.Format.TEXT)
            if cls is None:  # psycopg registers a text loader for the unknown type: not seen
                raise LookupError(f"no text loader for the type {oid}")
            loaders.append(cls(oid, self.connection))
        return loaders

    def _result(self, ends: float) -> pq.abc.PGresult:
        pgconn = self.pgconn
        while pgconn.flush():  # non-blocking: the rest goes once the socket takes it
            self._wait(ends, select.POLLOUT)
        result = None
        while True:
            while pgconn.is_busy():
                self._wait(ends, select.POLLIN)
                pgconn.consume_input()
            following = pgconn.get_result()
            if following is None:
                if result is None:
                    raise psycopg.OperationalError("the server sent no result")
                return result
            result = following

    def _wait(self, ends: float, events: int) -> None:
        left = ends - time.monotonic()
        if events != select.POLLIN:
            self.poll.modify(self.pgconn.socket, events)
        try:
            if left <= 0 or not self.poll.poll(left * 1000):
                raise TimedOut("the database did not answer within the deadline")
        finally:
            if events != select.POLLIN:
                self.poll.modify(self.pgconn.socket, select.POLLIN)

    def _check(self, result: pq.abc.PGresult, name: bytes | None = None) -> pq.abc.PGresult:
        if result.status in _OK:
            return result
        sqlstate = (result.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
        message = (result.error_message or b"").decode(errors="replace").strip()
        try:
            cls = errors.lookup(sqlstate) if sqlstate else psycopg.OperationalError
        except KeyError:
            cls = psycopg.DatabaseError
        if name is not None and sqlstate == "26000":
            # "prepared statement does not exist" (a DISCARD ALL, a pooler): prepared again next time.
            self.loaders.pop(name, None)
        raise cls(message)
