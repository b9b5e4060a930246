"""Which domain a request belongs to, decided from its Host header."""

from __future__ import annotations

from flask import request
from sqlalchemy import String, bindparam, func, select

from authsvc.core.database import db
from authsvc.core.errors import UnknownDomain
from authsvc.core.models import Domain
from authsvc.core.request_state import state
from authsvc.core.settings import settings


def request_host() -> str:
    """The request's host name: lower-cased, port dropped."""
    return host_name(request.host)


def host_name(host: str) -> str:
    """``host`` (a Host header's value, as werkzeug reads it) lower-cased, port dropped."""
    host = host.lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def issuer() -> str:
    """The scheme, host and port the request came in on: the issuer (RFC 8414 3.3) and ``iss``."""
    # Not request.host_url: it converts the URL to an IRI on every call, and
    # the issuer is a URL (a punycode host stays as the client sent it).
    return f"{request.scheme}://{request.host}"


# current_domain's rule as a condition on the domain table, for a statement
# that finds the domain along with what it looks up (inspect's credential, the
# token endpoint's client): one round trip, not two. Its bound parameters are
# request_domain_parameters().
_by_host = Domain.__table__.alias("host_domain")
REQUEST_DOMAIN = Domain.__table__.c.host == func.coalesce(
    select(_by_host.c.host).where(_by_host.c.host == bindparam("host")).scalar_subquery(),
    bindparam("default_host", type_=String),
)


# REQUEST_DOMAIN when no default domain is configured (``default_host`` None): the same
# rule without its subquery, which costs the database a scan per statement (inspect's).
REQUEST_HOST = Domain.__table__.c.host == bindparam("host")


def request_domain_parameters() -> dict[str, str | None]:
    """REQUEST_DOMAIN's parameters for this request: its host, and the configured default."""
    return {"host": request_host(), "default_host": settings().default_domain or None}


def domain_found() -> Domain | None:
    """The request's domain if it was found already (``current_domain``, ``found``), else None: no read."""
    return state().domain


def found(domain: Domain) -> None:
    """Note ``domain`` as the request's: a reader that selected it by ``REQUEST_DOMAIN`` with its own row.

    (The token endpoint's client lookup, authsvc.oauth.clients.) ``current_domain`` then answers it unread.
    """
    state().domain = domain


def current_domain() -> Domain:
    """The domain whose ``host`` is the request's, or the configured default; else UnknownDomain (a 404)."""
    noted = state()
    domain = noted.domain
    if domain is None:
        domain = db.session.scalar(select(Domain).where(Domain.host == request_host()))
        default = settings().default_domain
        if domain is None and default:
            domain = db.session.scalar(select(Domain).where(Domain.host == default))
        if domain is None:
            raise UnknownDomain()
        noted.domain = domain
    return domain
