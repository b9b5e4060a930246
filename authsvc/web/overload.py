"""Shedding load: a request that waited in the server's queue past ``AUTHSVC_QUEUE_TIMEOUT`` gets a 503 at once.

Sent more requests than its workers can serve, the service queues the rest
in the listening socket's backlog (a gunicorn sync worker takes one
connection at a time). Served in turn, each would wait longer than the one
before: every answer comes late, clients give up on requests the service
still goes on to serve, and once the backlog is full new connections are
dropped unanswered. A worker that picks up a request which has already
waited longer than the bound answers it ``503 temporarily_unavailable`` with
``Retry-After``, without reading the database or Redis: tens of
microseconds, not the work of serving it. The workers catch up with the
queue, the requests they serve are answered within the bound and their own
time, and every other client is told when to come back.

How long it waited is the kernel's to say: ``tcpi_last_data_recv`` of the
connection's TCP_INFO (Linux), the milliseconds since the last of the
request's bytes arrived, whether it sat in the backlog or in gunicorn's own
queue (a threaded worker). Where that cannot be read (a Unix socket, another
system, a server other than gunicorn) nothing is shed. Nor is a request that
arrived before the worker was ready (it waited for a start or a restart, not
behind other requests), nor the health endpoints: a load balancer that took
an overloaded instance for a dead one would send its share to the others.
docs/operations.md, "Overload".
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask

from authsvc.core.settings import settings
from authsvc.web import deployment, logs, metrics

# Where tcpi_last_data_recv sits in struct tcp_info (linux/tcp.h): eight one-byte fields, then
# rto, ato, snd_mss, rcv_mss, unacked, sacked, lost, retrans, fackets, last_data_sent, last_ack_sent.
_LAST_DATA_RECV = struct.Struct("=I")
_LAST_DATA_RECV_OFFSET = 52
_TCP_INFO = getattr(socket, "TCP_INFO", None)
NEVER_SHED = ("/healthz", "/readyz", "/metrics")
EXTENSION = "authsvc.overload"
_ID_SLOT = "request-id-slot-00000000"  # a valid request id, where each answer's goes in the bytes made once

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def queued_for(environ: dict[str, Any]) -> float | None:
    """Seconds since the request's last bytes arrived (its wait for a worker), or None where it cannot be known."""
    sock = environ.get("gunicorn.socket")
    return None if sock is None else queued_for_socket(sock)


def queued_for_socket(sock: socket.socket) -> float | None:
    """Seconds since the last bytes arrived on ``sock``, or None where it cannot be known."""
    if _TCP_INFO is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _LAST_DATA_RECV_OFFSET + _LAST_DATA_RECV.size)
    except OSError:  # not TCP (a Unix socket), or closed by the client meanwhile
        return None
    if len(info) < _LAST_DATA_RECV_OFFSET + _LAST_DATA_RECV.size:
        return None
    return float(_LAST_DATA_RECV.unpack_from(info, _LAST_DATA_RECV_OFFSET)[0]) / 1000


class QueueTimeout:
    """WSGI middleware before the fast path and Flask: 503 to a request that waited over ``seconds`` for a worker."""

    def __init__(self, wsgi_app: Wsgi, seconds: float, retry_after: int, hsts_max_age: int, proxy_hops: int = 0):
        self.wsgi_app = wsgi_app
        self.seconds = seconds
        self.retry_after = str(retry_after)
        description = f"The service is overloaded: this request waited over {seconds:g} s for it. Retry shortly."
        self.body = (json.dumps({"error": "temporarily_unavailable", "error_description": description}) + "\n").encode()
        self.scim_body = json.dumps(
            {"schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"], "status": "503", "detail": description}
        ).encode()
        self.hsts_max_age = hsts_max_age
        self.proxy_hops = proxy_hops
        self.raw: dict[tuple[bool, bool], tuple[bytes, bytes]] = {}
        # Built in the worker once its app is (gunicorn forks before the app is made): what arrived before
        # this moment waited for the worker to start, not behind other requests, and is served.
        self.ready = time.monotonic()

    def over(self, waited: float) -> bool:
        """Whether a request that waited ``waited`` seconds is shed (not one that waited for the worker's start)."""
        return waited > self.seconds and time.monotonic() - waited >= self.ready

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        waited = queued_for(environ)
        path = environ.get("PATH_INFO", "")
        if waited is None or not self.over(waited) or self.never_shed(path):
            return self.wsgi_app(environ, start_response)
        self.count_shed()
        secure = environ.get("wsgi.url_scheme") == "https"
        body, headers = self.answer(path, environ.get("HTTP_X_REQUEST_ID", ""), secure)
        start_response("503 Service Unavailable", headers)
        return [body]

    def answer(self, path: str, request_id: str, secure: bool) -> tuple[bytes, list[tuple[str, str]]]:
        """The 503's body and headers for a request to ``path``."""
        scim = path.startswith("/scim/")
        body = self.scim_body if scim else self.body
        headers = [
            ("Content-Type", "application/scim+json" if scim else "application/json"),
            ("Content-Length", str(len(body))),
            ("Retry-After", self.retry_after),
            ("Cache-Control", "no-store"),
            (logs.REQUEST_ID_HEADER, logs.choose_request_id(request_id)),
            *deployment.protective_header_values(secure, self.hsts_max_age),
        ]
        return body, headers

    def raw_answer(self, path: str, request_id: str, secure: bool) -> bytes:
        """The 503 as bytes on the wire, closing the connection (for authsvc/web/shedding_worker.py)."""
        key = (path.startswith("/scim/"), secure)
        if key not in self.raw:  # made once each: only the request id differs from one to the next
            body, headers = self.answer(path, _ID_SLOT, secure)
            lines = ["HTTP/1.1 503 Service Unavailable", *(f"{k}: {v}" for k, v in headers), "Connection: close"]
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            before, _, after = head.partition(_ID_SLOT.encode())
            self.raw[key] = (before, after + body)
        before, after = self.raw[key]
        return before + logs.choose_request_id(request_id).encode("latin-1") + after

    def forwarded_https(self, forwarded_proto: str) -> bool:
        """Whether a request with this X-Forwarded-Proto reached the trusted proxy over https (as ProxyFix reads it)."""
        values = [value.strip() for value in forwarded_proto.split(",")] if forwarded_proto else []
        return 0 < self.proxy_hops <= len(values) and values[-self.proxy_hops] == "https"

    def count_shed(self) -> None:
        metrics.SHED.inc()

    # For authsvc/web/shedding_worker.py, which imports nothing of the service.
    queued_for_socket = staticmethod(queued_for_socket)

    @staticmethod
    def never_shed(path: str) -> bool:
        return path.startswith(NEVER_SHED)


def init_app(app: Flask) -> None:
    """Put the bound in front of the fast path and Flask, inside ProxyFix (0 turns it off)."""
    config = settings(app)
    if config.queue_timeout > 0:
        bound = QueueTimeout(
            app.wsgi_app, config.queue_timeout, config.retry_after, config.hsts_max_age, config.proxy_hops
        )
        app.wsgi_app = bound  # type: ignore[method-assign]
        # Where the gunicorn worker of authsvc/web/shedding_worker.py finds it, to shed at accept.
        app.extensions[EXTENSION] = bound
