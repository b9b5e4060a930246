"""A loopback TCP forwarder between the service and a real server, which a test can cut and restore.

Cutting closes the listening socket and every forwarded connection: the
service sees its connections reset and new ones refused, as when the server
goes away, while the machine's shared server itself is never touched.
Freezing stalls it instead: connections stay open and new ones are accepted,
but no byte goes through either way, as when packets are dropped or the
server hangs; the service gets no answer and no error. Thawing lets the
stalled bytes through again.

``PostgresMessages`` reads what a client sends a PostgreSQL server through
the proxy (the frontend protocol, unencrypted: connect with
``sslmode=disable``), so that a test can count the statements a request runs.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import Counter

from tests.helpers.servers import free_port

# Requests a client may send before its startup message, each answered with one byte.
_SSL_REQUEST, _GSSENC_REQUEST = 80877103, 80877104


class PostgresMessages:
    """Counts the messages of PostgreSQL's frontend protocol, by type: ``Q`` simple query, ``P`` parse, ``E`` execute.

    One instance per client connection reads its stream (in whatever chunks
    it arrives) and adds to a shared Counter.
    """

    def __init__(self, counts: Counter, lock: threading.Lock):
        self.counts = counts
        self.lock = lock
        self.buffer = b""
        self.started = False

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while True:
            if not self.started:  # a startup message (or SSL/GSS request): length, then a code, no type byte
                if len(self.buffer) < 8:
                    return
                length, code = struct.unpack("!ii", self.buffer[:8])
                if length < 8:
                    raise AssertionError("not PostgreSQL's protocol (an encrypted stream? use sslmode=disable)")
                if len(self.buffer) < length:
                    return
                self.buffer = self.buffer[length:]
                self.started = code not in (_SSL_REQUEST, _GSSENC_REQUEST)
                continue
            if len(self.buffer) < 5:
                return
            kind = chr(self.buffer[0])
            (length,) = struct.unpack("!i", self.buffer[1:5])
            if length < 4:
                raise AssertionError("not PostgreSQL's protocol (an encrypted stream? use sslmode=disable)")
            if len(self.buffer) < 1 + length:
                return
            self.buffer = self.buffer[1 + length :]
            with self.lock:
                self.counts[kind] += 1


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, count_postgres: bool = False):
        self.target = (target_host, target_port)
        # With count_postgres: messages clients sent to the PostgreSQL target, by type (PostgresMessages).
        self.count_postgres = count_postgres
        self.postgres_messages: Counter = Counter()
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._flowing = threading.Event()
        self._flowing.set()
        self.restore()

    def url_for(self, url: str) -> str:
        """``url`` (redis://, postgresql://...) pointed at this proxy instead of the target."""
        host, port = self.target
        return url.replace(f"@{host}:{port}/", f"@127.0.0.1:{self.port}/").replace(
            f"//{host}:{port}/", f"//127.0.0.1:{self.port}/"
        )

    def restore(self) -> None:
        """Accept and forward connections again (on the same port)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and drop every open one."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            # shutdown wakes the thread blocked in accept(); close alone leaves
            # the port listening until it returns, and restore() could not bind.
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def freeze(self) -> None:
        """Stall every connection, open or new: nothing is forwarded, nothing refused or closed."""
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self.thaw()  # stalled threads go on, and end with their sockets
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # the listener was closed: cut
            self._flowing.wait()  # frozen: the connection is accepted, and left without an answer
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._sockets.update((client, upstream))
            reader = PostgresMessages(self.postgres_messages, self._lock) if self.count_postgres else None
            for src, dst, seen in ((client, upstream, reader), (upstream, client, None)):
                threading.Thread(target=self._pump, args=(src, dst, seen), daemon=True).start()

    def postgres_statements(self) -> int:
        """Statements clients ran through the proxy so far: simple queries and executions of prepared ones."""
        with self._lock:
            return self.postgres_messages["Q"] + self.postgres_messages["E"]

    def _pump(self, src: socket.socket, dst: socket.socket, seen: PostgresMessages | None = None) -> None:
        try:
            while data := src.recv(65536):
                self._flowing.wait()
                if seen is not None:
                    seen.feed(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._sockets.difference_update((src, dst))
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
