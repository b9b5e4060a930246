"""Running behind a TLS-terminating proxy, and the headers every answer carries.

With ``AUTHSVC_PROXY_HOPS`` = N, the last N proxies' ``X-Forwarded-For``,
``-Proto``, ``-Host`` and ``-Port`` are believed (werkzeug's ProxyFix): the
app then sees the client's address and the original https URL, so issuer,
redirects and Authlib's transport check need no insecure-transport switch.
Never set it higher than the number of proxies in front of the service: a
client could otherwise claim any address or scheme.
"""

from __future__ import annotations

from flask import Flask, Response, current_app, request
from werkzeug.middleware.proxy_fix import ProxyFix

from authsvc.core.errors import CrossSiteRefused
from authsvc.core.policy import policy_of
from authsvc.core.security import UNSAFE_METHODS, forged_cross_site_request
from authsvc.core.settings import settings
from authsvc.web.pages import PAGE_HEADERS


def protective_header_values(secure: bool, hsts_max_age: int) -> list[tuple[str, str]]:
    """The headers every answer carries, whatever it is."""
    values = [("X-Content-Type-Options", "nosniff")]
    if secure and hsts_max_age > 0:
        # Only over https: a browser ignores it on http, and a local http run must stay reachable.
        values.append(("Strict-Transport-Security", f"max-age={hsts_max_age}; includeSubDomains"))
    return values


def init_app(app: Flask) -> None:
    hops = settings(app).proxy_hops
    if hops > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops, x_port=hops)  # type: ignore[method-assign]
    hsts_max_age = settings(app).hsts_max_age

    @app.before_request
    def refuse_forged_cross_site_requests() -> None:
        if (
            request.method in UNSAFE_METHODS
            # RFC 6749 clients (often browser applications on their own origin) and a SAML IdP's page
            # posting its response call some views by design: those declare it (``@cross_site``).
            and not policy_of(current_app.view_functions.get(request.endpoint or "")).cross_site
            and forged_cross_site_request(request.method, request.headers, f"{request.scheme}://{request.host}")
        ):
            raise CrossSiteRefused("State-changing requests from another site's pages are refused.")

    @app.after_request
    def protective_headers(response: Response) -> Response:
        for name, value in protective_header_values(request.is_secure, hsts_max_age):
            response.headers[name] = value
        if response.mimetype == "text/html":
            # Every HTML answer gets the pages' policy, whoever rendered it.
            for name in ("Content-Security-Policy", "X-Frame-Options"):
                response.headers.setdefault(name, PAGE_HEADERS[name])
        return response


def client_address() -> str:
    """The client's address (the proxy's view of it behind AUTHSVC_PROXY_HOPS)."""
    return request.remote_addr or "unknown"
