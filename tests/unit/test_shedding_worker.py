"""What the sync worker reads of a connection before shedding it: the path, the scheme behind a proxy."""

from __future__ import annotations

from authsvc.web.overload import QueueTimeout
from authsvc.web.shedding_worker import _FORWARDED_PROTO, _header, _path


def test_the_path_is_read_as_path_info_is_from_origin_or_absolute_form():
    assert _path(b"GET /api/engine/v2/api_keys/inspect?x=1 HTTP/1.1\r\nHost: a\r\n\r\n") == (
        "/api/engine/v2/api_keys/inspect"
    )
    # Percent-decoded, as PATH_INFO: the health check spelled otherwise is still the health check.
    assert _path(b"GET /%68ealthz HTTP/1.1\r\n\r\n") == "/healthz"
    assert _path(b"GET http://auth.example/readyz HTTP/1.1\r\n\r\n") == "/readyz"
    # No whole request line yet (or not HTTP): not shed here, gunicorn reads and answers it.
    assert _path(b"GET /healthz") is None
    assert _path(b"\x16\x03\x01\x02\x00") is None


def test_the_early_answer_is_https_only_through_the_trusted_proxy():
    head = b"GET / HTTP/1.1\r\nX-Forwarded-Proto: http, https\r\n\r\n"
    proto = _header(_FORWARDED_PROTO, head)
    assert proto == "http, https"

    def bound(hops: int) -> QueueTimeout:
        return QueueTimeout(lambda e, s: [], 1.0, 5, 31536000, hops)

    assert bound(1).forwarded_https(proto)  # the nearest proxy saw https
    assert not bound(2).forwarded_https(proto)  # the one before it saw http
    assert not bound(0).forwarded_https(proto)  # no proxy is trusted
    assert not bound(3).forwarded_https(proto)  # fewer values than hops: ProxyFix keeps the scheme too


def test_the_early_answer_is_the_wsgi_answer_with_connection_close():
    queue = QueueTimeout(lambda e, s: [], 1.0, 5, 31536000, 1)
    raw = queue.raw_answer("/scim/v2/Users", "client-request-1", secure=True)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 503 Service Unavailable"
    expected_body, headers = queue.answer("/scim/v2/Users", "client-request-1", True)
    assert body == expected_body
    assert [f"{k}: {v}" for k, v in headers] + ["Connection: close"] == lines[1:]
    assert "Strict-Transport-Security: max-age=31536000; includeSubDomains" in lines
    # A new id for a client that sent none (or a malformed one), as on any answer.
    other = queue.raw_answer("/scim/v2/Users", "", secure=True)
    assert b"X-Request-Id: client-request-1" not in other and b"X-Request-Id: " in other
