"""Overload under the real gunicorn's sync worker: a connection that waited past the bound is answered 503 at accept.

The worker (one, sync: ``GUNICORN_THREADS=1``) is stopped (SIGSTOP) while
connections arrive, so that they wait in the listening socket's backlog as they
would behind a busy worker, then let go. What waited longer than the bound is
answered by authsvc/web/shedding_worker.py before gunicorn parses it (so it
leaves no access log line), with the answer the WSGI check gives, and a
clean close: the client reads the whole answer, even one that sent a body.
The health check, and a request whose bytes arrived after the wait, are served.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import requests

from devtools.processes import children
from tests.helpers.servers import running_service

pytestmark = pytest.mark.slow

INSPECT = "/api/engine/v2/api_keys/inspect"
QUEUE_TIMEOUT = 0.3
MARK = "accept-shed-"  # in the request ids of this module's requests, to find their access log lines


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    env = {
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "1",
        "AUTHSVC_QUEUE_TIMEOUT": str(QUEUE_TIMEOUT),
        "AUTHSVC_RETRY_AFTER": "7",
    }
    with running_service(tmp_path_factory.mktemp("instance"), **env) as svc:
        svc.cli("domains", "create", "--name", "Overload", "--host", "127.0.0.1")
        yield svc


def port(service) -> int:
    return int(service.url.rsplit(":", 1)[1])


def raw(path: str, request_id: str, method: str = "GET", body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: {request_id}\r\nConnection: close\r\n"
    if method == "POST":
        head += f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + body


def answer_of(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Read to the end (a reset raises): status, headers (lower-case names), body."""
    sock.settimeout(20)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def shed_count(url):
    metrics = requests.get(url + "/metrics", timeout=20).text
    [line] = [line for line in metrics.splitlines() if line.startswith("authsvc_shed_requests_total ")]
    return float(line.split()[1])


@contextmanager
def stopped_worker(service) -> Iterator[None]:
    """The worker stopped for the block, then for three bounds more: what was sent meanwhile waits in the backlog."""
    [worker] = children(service.process.pid)
    os.kill(worker, signal.SIGSTOP)
    try:
        yield
        time.sleep(3 * QUEUE_TIMEOUT)
    finally:
        os.kill(worker, signal.SIGCONT)


def test_connections_that_waited_past_the_bound_are_answered_503_at_accept_and_read_whole(service):
    assert requests.get(service.url + INSPECT, timeout=20).status_code == 401  # served as usual before
    shed_before = shed_count(service.url)
    sends = [
        (INSPECT, "GET", b""),
        ("/auth/oauth/token", "POST", b"grant_type=client_credentials&client_id=nobody&" + b"x" * 20000),
        ("/scim/v2/Users", "GET", b""),
        ("/healthz", "GET", b""),
    ]
    many = 200  # a backlog, as an overload builds one
    with stopped_worker(service):
        socks = []
        for k, (path, method, body) in enumerate(sends + [(INSPECT, "GET", b"")] * many):
            sock = socket.create_connection(("127.0.0.1", port(service)), timeout=20)
            sock.sendall(raw(path, f"{MARK}{k:04d}", method, body))
            socks.append(sock)
    answers = [answer_of(sock) for sock in socks]
    (inspect, posted, scim, healthz), rest = answers[:4], answers[4:]
    for status, headers, body in (inspect, posted, *rest):
        assert status == 503, (status, body)
        assert headers["retry-after"] == "7"
        assert headers["cache-control"] == "no-store"
        assert headers["content-type"] == "application/json"
        assert headers["x-content-type-options"] == "nosniff"
        assert json.loads(body)["error"] == "temporarily_unavailable"
    # The client's request id is kept, as on any answer.
    assert inspect[1]["x-request-id"] == f"{MARK}0000"
    # A body sent with the request was read before the close: the client read the answer, not a reset.
    assert posted[0] == 503
    assert scim[0] == 503
    assert json.loads(scim[2])["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    # The health check is never shed: a load balancer must not take an overloaded instance for a dead one.
    assert healthz[0] == 200
    assert requests.get(service.url + INSPECT, timeout=20).status_code == 401  # back to normal at once
    assert shed_count(service.url) == shed_before + 3 + many
    # Answered before gunicorn parsed them: no access log line but the health check's.
    logged = [line for line in service.output().splitlines() if MARK in line]
    assert len(logged) == 1, logged
    assert "/healthz" in logged[0]


def test_a_request_whose_bytes_arrived_after_the_wait_is_served(service):
    # Connected while the worker was stopped, but its request sent only once it runs again: the request
    # itself waited for nobody (the bound counts from its last bytes), so it is served.
    with stopped_worker(service):
        sock = socket.create_connection(("127.0.0.1", port(service)), timeout=20)
    time.sleep(0.1)
    sock.sendall(raw(INSPECT, f"{MARK}late"))
    status, _, _ = answer_of(sock)
    assert status == 401
