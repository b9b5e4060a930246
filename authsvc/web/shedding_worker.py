"""gunicorn's sync worker, shedding at accept: a connection that waited past the bound is answered unparsed.

The queue bound of authsvc/web/overload.py, applied in WSGI, costs a shed
request almost what gunicorn spends on any request (parse, environ, the
response, the access log line): some 0.3 ms, against inspect's 0.6 ms. At
twice the rate the workers sustain they could not even shed fast enough, the
backlog filled, and the kernel dropped new connections unanswered (clients
retried their SYN after 1, 3, 7 s). Here the worker looks at the connection
right after ``accept``: its wait (``tcpi_last_data_recv``, as overload.py
reads it), then the request line, peeked (``MSG_PEEK``, so that a connection
that is served reaches gunicorn's parser whole). One that waited past the
bound gets the same 503 the WSGI check writes, as bytes made once, and is
closed after its request was read, so the client reads the answer rather
than a reset. A few system calls: a seventh of the WSGI check's CPU (bench/shed_cost.py).

What is not shed here falls through to gunicorn and then to the WSGI check,
which still applies its rule: a request whose bytes arrived late, a threaded
worker's (this class is the sync worker's; ``GUNICORN_THREADS`` above 1 keeps
gunicorn's threaded worker), a TLS listener's (the request line cannot be
peeked).
docs/operations.md, "Overload".
"""

from __future__ import annotations

import re
import socket
import time
from typing import Any
from urllib.parse import unquote

from gunicorn import util
from gunicorn.workers.sync import SyncWorker

# Enough for the request line's start (the path's first segment) and the usual headers after it.
_PEEK = 4096
_REQUEST_ID = re.compile(rb"\r\nx-request-id:[ \t]*([^\r\n]*)", re.IGNORECASE)
_FORWARDED_PROTO = re.compile(rb"\r\nx-forwarded-proto:[ \t]*([^\r\n]*)", re.IGNORECASE)
EXTENSION = "authsvc.overload"  # where the app keeps its queue bound (authsvc.web.overload.EXTENSION)
_SHED_LOG_EVERY = 10.0  # seconds between the worker's log lines on what it shed


def _path(head: bytes) -> str | None:
    """The request's path (percent-decoded, as PATH_INFO is), or None when the peeked bytes hold no request line."""
    line = head.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
        return None
    target = parts[1].decode("latin-1")
    if "://" in target:  # absolute form (RFC 9112 3.2.2): the path starts after the authority
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    return unquote(target.partition("?")[0])


def _header(pattern: re.Pattern[bytes], head: bytes) -> str:
    found = pattern.search(head.split(b"\r\n\r\n", 1)[0])
    return found.group(1).decode("latin-1").strip() if found else ""


class SheddingWorker(SyncWorker):
    """The sync worker; a connection that waited past ``AUTHSVC_QUEUE_TIMEOUT`` is answered 503 at accept."""

    bound: Any = None  # the app's QueueTimeout, once the app is loaded (None: nothing is shed here)
    shed_since_log = 0
    logged_at = 0.0

    def run(self) -> None:
        # Here, after gunicorn loaded the app. Nothing of the service is imported for it: the benchmark's
        # floors (a bare Flask route, Authlib's twin) run with these settings and must weigh what they did.
        extensions = getattr(self.wsgi, "extensions", None)
        if isinstance(extensions, dict) and not self.cfg.is_ssl:
            self.bound = extensions.get(EXTENSION)
        self.logged_at = time.monotonic()
        super().run()

    def accept(self, listener: socket.socket) -> None:
        client, addr = listener.accept()
        client.setblocking(True)
        util.close_on_exec(client)
        if self.bound is not None and self.shed(client):
            return
        self.handle(listener, client, addr)

    def shed(self, client: socket.socket) -> bool:
        """Answer ``client`` 503 and close it if its request waited past the bound; whether it did."""
        waited = self.bound.queued_for_socket(client)
        if waited is None or not self.bound.over(waited):
            return False
        try:
            head = client.recv(_PEEK, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, OSError):  # nothing sent yet (gunicorn waits for it), or gone
            return False
        path = _path(head)
        if path is None or self.bound.never_shed(path):
            return False
        secure = self.bound.proxy_hops > 0 and self.bound.forwarded_https(_header(_FORWARDED_PROTO, head))
        answer = self.bound.raw_answer(path, _header(_REQUEST_ID, head), secure)
        try:
            # Read what the client sent (it all arrived: it waited past the bound since its last byte), so
            # that closing sends a FIN after the answer, not a reset that could discard it unread.
            while client.recv(65536, socket.MSG_DONTWAIT):
                pass
        except OSError:  # BlockingIOError: all of it read
            pass
        try:
            client.sendall(answer)
            client.shutdown(socket.SHUT_WR)
        except OSError:  # the client gave up meanwhile
            pass
        finally:
            client.close()
        self.bound.count_shed()
        self.note_shed()
        return True

    def note_shed(self) -> None:
        """One log line every _SHED_LOG_EVERY seconds at most: these answers skip the access log."""
        self.shed_since_log += 1
        now = time.monotonic()
        if now - self.logged_at >= _SHED_LOG_EVERY:
            self.log.warning(
                "Overloaded: %d requests that waited over %g s answered 503 at accept in the last %.0f s",
                self.shed_since_log,
                self.bound.seconds,
                now - self.logged_at,
            )
            self.shed_since_log, self.logged_at = 0, now
