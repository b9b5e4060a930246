"""Server-side requests to URLs that a tenant admin chose (SSO providers' endpoints).

By default such a request goes over https only, to a public address, without
following redirects: requests-hardened's adapter resolves the host on every
request, refuses loopback, link-local, private and reserved addresses, and
connects to the very address it checked, so a DNS answer that changes after
registration (rebinding) does not help. A system admin may allow a provider
on private networks (an on-premises identity provider).

Imported only where a provider is called: requests costs a web worker memory.
"""

from __future__ import annotations

from typing import Any

import requests
from requests.adapters import BaseAdapter
from requests_hardened.ip_filter import InvalidIPAddress
from requests_hardened.ip_filter_adapter import IPFilterAdapter


class Blocked(requests.RequestException):
    """The request would have gone somewhere the destination rules do not allow."""


class _RefusePlainHttp(BaseAdapter):
    """Mounted on http:// for a session kept off private networks."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        raise Blocked("plain http is not allowed for this provider")

    def close(self) -> None:
        pass


def guard(session: requests.Session | None, *, allow_private: bool) -> requests.Session:
    """``session`` (or a new one): no redirects; unless ``allow_private``, https to public addresses only."""
    session = session if session is not None else requests.Session()
    session.max_redirects = 0
    if not allow_private:
        # Proxies from the environment would make the checked address the proxy's.
        session.trust_env = False
        session.mount("https://", IPFilterAdapter(is_https_proto=True))
        session.mount("http://", _RefusePlainHttp())
    return session


def refused(exc: BaseException) -> bool:
    """Whether a failed request was stopped by the destination rules, not by the peer."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (Blocked, InvalidIPAddress, requests.TooManyRedirects)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
