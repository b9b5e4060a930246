"""Server-side HTTP requests to URLs that someone else chose (providers, applications, IdP metadata).

Destination: by default such a request goes over https only, to a public
address, without following redirects: requests-hardened's adapter resolves
the host on every request, refuses loopback, link-local, private and reserved
addresses, and connects to the very address it checked, so a DNS answer that
changes after registration (rebinding) does not help. A system admin may
allow a destination on private networks (an on-premises identity provider).

Time and size: every request has one deadline, ``AUTHSVC_OUTBOUND_DEADLINE``
seconds from connecting to the body's last byte (authsvc.core.deadline shuts
its sockets down when it passes; a per-read timeout alone lets a peer that
trickles a byte at a time hold the caller for ever). The body is read within
it, and refused past ``max_bytes`` (``TooLarge``); a caller that has no use for
it (back-channel logout) has it read and dropped, never kept.

Imported only where a peer is called: requests costs a web worker memory.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from requests_hardened.ip_filter import InvalidIPAddress
from requests_hardened.ip_filter_adapter import IPFilterAdapter
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool, poolmanager
from urllib3.connection import HTTPConnection, HTTPSConnection

from authsvc.core import deadline

DEFAULT_MAX_BYTES = 1024 * 1024  # an OIDC discovery document, JWKS, token or UserInfo answer is far smaller
_CHUNK = 64 * 1024


class Blocked(requests.RequestException):
    """The request would have gone somewhere the destination rules do not allow."""


class DeadlineExceeded(requests.Timeout):
    """The whole exchange took longer than its deadline."""


class TooLarge(requests.RequestException):
    """The answer's body is larger than the caller accepts."""


class _RefusePlainHttp(BaseAdapter):
    """Mounted on http:// for a session kept off private networks."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        raise Blocked("plain http is not allowed for this destination")

    def close(self) -> None:
        pass


class _Watched:
    """A urllib3 connection whose socket the caller's deadline shuts down when it passes."""

    sock: Any

    def _new_conn(self) -> Any:
        sock = super()._new_conn()  # type: ignore[misc]
        deadline.watch(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self.sock is not None:  # a kept-alive connection: watched by this request's deadline too
            deadline.watch(self.sock)
        super().request(*args, **kwargs)  # type: ignore[misc]


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class _Bounded:
    """An adapter whose every request runs under one deadline and reads its body (capped) within it."""

    seconds: float = 10.0
    max_bytes: int = DEFAULT_MAX_BYTES
    keep_body: bool = True

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)  # type: ignore[misc]
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS  # type: ignore[attr-defined]

    def proxy_manager_for(self, *args: Any, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(*args, **kwargs)  # type: ignore[misc]
        if manager.pool_classes_by_scheme is poolmanager.pool_classes_by_scheme:  # not SOCKS, which has its own
            manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager

    # HTTPAdapter.send's signature: the adapters below put this class before it.
    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: bool | str = True,
        cert: Any = None,
        proxies: dict[str, str] | None = None,
    ) -> requests.Response:
        with deadline.within(self.seconds) as limit:
            try:
                response: requests.Response = super().send(  # type: ignore[misc]
                    request, stream=True, timeout=_bounded(timeout, limit), verify=verify, cert=cert, proxies=proxies
                )
                try:
                    _read_body(response, self.max_bytes, self.keep_body)
                finally:
                    response.close()
                if self.keep_body:
                    limit.remaining()  # a body cut short by the deadline may look complete
            except (requests.RequestException, deadline.DeadlineExceeded) as exc:
                if isinstance(exc, deadline.DeadlineExceeded) or _spent(limit):
                    # No URL in the message: a caller may log it, and a URL may carry a secret.
                    raise DeadlineExceeded(
                        f"no whole answer within the deadline of {limit.seconds:g} s", request=request
                    ) from exc
                raise
        return response


class _BoundedAdapter(_Bounded, HTTPAdapter):
    pass


class _BoundedPublicAdapter(_Bounded, IPFilterAdapter):  # type: ignore[misc]  # IPFilterAdapter is untyped
    pass


def _spent(limit: deadline.Deadline) -> bool:
    try:
        limit.remaining()
    except deadline.DeadlineExceeded:
        return True
    return False


def _bounded(timeout: Any, limit: deadline.Deadline) -> tuple[float, float]:
    """The caller's (connect, read) timeouts, none longer than what is left of the deadline."""
    left = limit.remaining()
    connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
    return (min(connect or left, left), min(read or left, left))


def _read_body(response: requests.Response, max_bytes: int, keep: bool) -> None:
    """Read the body now, under the deadline: kept (TooLarge past ``max_bytes``), or read and dropped."""
    if not keep:
        _drop_body(response, max_bytes)
        return
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge(f"the answer is larger than {max_bytes} bytes", response=response)
    kept: list[bytes] = []
    size = 0
    for chunk in response.iter_content(_CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(f"the answer is larger than {max_bytes} bytes", response=response)
        kept.append(chunk)
    response._content = b"".join(kept)
    response._content_consumed = True


def _drop_body(response: requests.Response, max_bytes: int) -> None:
    """Read up to ``max_bytes`` and keep none: the status said what the caller needs.

    A body that is longer, breaks off or outlasts the deadline closes the
    connection instead of failing the request.
    """
    size = 0
    try:
        for chunk in response.iter_content(_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                break
        else:
            response._content, response._content_consumed = b"", True
            return
    except (requests.RequestException, deadline.DeadlineExceeded):
        pass
    response.raw.close()
    response._content, response._content_consumed = b"", True


def guard(
    session: requests.Session | None,
    *,
    allow_private: bool,
    seconds: float,
    max_bytes: int = DEFAULT_MAX_BYTES,
    keep_body: bool = True,
) -> requests.Session:
    """``session`` (or a new one) under the destination, time and size rules above.

    No redirects; unless ``allow_private``, https to public addresses only.
    Each request ends within ``seconds``; its body is read within them, refused
    past ``max_bytes`` (``TooLarge``), or read and dropped unless ``keep_body``.
    """
    session = session if session is not None else requests.Session()
    session.max_redirects = 0
    if allow_private:
        adapters: dict[str, Any] = {"https://": _BoundedAdapter(), "http://": _BoundedAdapter()}
    else:
        # Proxies from the environment would make the checked address the proxy's.
        session.trust_env = False
        adapters = {"https://": _BoundedPublicAdapter(is_https_proto=True), "http://": _RefusePlainHttp()}
    for prefix, adapter in adapters.items():
        if isinstance(adapter, _Bounded):
            adapter.seconds, adapter.max_bytes, adapter.keep_body = seconds, max_bytes, keep_body
        session.mount(prefix, adapter)
    return session


def trust_store() -> str | bool:
    """What TLS is verified against: ``SSL_CERT_FILE`` or ``REQUESTS_CA_BUNDLE`` when set, else the system's
    store (OpenSSL's default file or directory), else requests' own bundle (True).

    For a request's ``verify`` (a session's would give way to REQUESTS_CA_BUNDLE where the session reads the
    environment; one kept off private networks reads none).
    """
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        if os.environ.get(name):
            return os.environ[name]
    paths = ssl.get_default_verify_paths()
    return paths.cafile or paths.capath or True


def refused(exc: BaseException) -> bool:
    """Whether a failed request was stopped by the destination rules, not by the peer."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (Blocked, InvalidIPAddress, requests.TooManyRedirects)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
