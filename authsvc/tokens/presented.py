"""Inspect's reads: a presented access token or API key with what its claims need, one prepared statement each.

Called by authsvc.api.credentials (``find_token``, ``find_api_key``) on every inspect: from
Flask's view, and from the WSGI fast path below Flask (authsvc.api.fastpath), which passes the
app's readers. They are the fast path of the platform's most frequent request (docs/performance.md,
"Inspect, counted"): one statement on the tables (no ORM entities) finds the token or key, the
columns of the claims, the user, who must be enabled, and the domain, chosen as
tenancy.current_domain chooses it: the one whose host is the request's, else the configured
default. On PostgreSQL it runs prepared on one of the readers' connections (core.readers.pool):
one round trip. A token is found by ``lookups.ACCESS_TOKEN``, the condition every reader of a
token by its access token uses. Nothing is cached: a revoked credential fails on its next use.
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import ColumnElement, Select, bindparam, select

from authsvc.core import security
from authsvc.core.models import ApiKey, Application, Domain, Token, User
from authsvc.core.readers.pool import Readers, read_one
from authsvc.core.tenancy import REQUEST_DOMAIN, REQUEST_HOST
from authsvc.tokens.lookups import ACCESS_TOKEN


class Claimant(Protocol):
    """The user's columns of either row."""

    id: int
    name: str
    email: str
    groups: list[str] | None
    admin: bool
    support: bool


class TokenClaims(Claimant, Protocol):
    """A live access token's row (not revoked, its user enabled; its expiry is the caller's to check)."""

    scope: str
    issued_at: int
    expires_in: int
    dpop_jkt: str | None
    audience: str | None
    act: dict[str, Any] | None
    client_id: str
    aud: str  # its domain's host
    profile: str


class ApiKeyClaims(Claimant, Protocol):
    """An API key's row, whatever its state: the caller compares the secret and checks the rest."""

    secret_digest: str
    scopes: str
    created_at: int
    expires_at: int | None
    revoked_at: int | None
    permission: str
    last_used_at: int | None
    aud: str  # its domain's host
    profile: str
    disabled: bool


_token, _application, _user, _api_key = Token.__table__, Application.__table__, User.__table__, ApiKey.__table__
_domain = Domain.__table__
_USER_COLUMNS = (_user.c.id, _user.c.name, _user.c.email, _user.c.groups, _user.c.admin, _user.c.support)


def _token_claims(domain_rule: ColumnElement[bool]) -> Select[Any]:
    return (
        select(
            _token.c.scope,
            _token.c.issued_at,
            _token.c.expires_in,
            _token.c.dpop_jkt,
            _token.c.audience,
            _token.c.act,
            _application.c.client_id,
            _domain.c.host.label("aud"),
            _domain.c.profile,
            *_USER_COLUMNS,
        )
        .select_from(
            _token.join(_application, _application.c.id == _token.c.application_id)
            .join(_domain, _domain.c.id == _application.c.domain_id)
            .join(_user, _user.c.id == _token.c.user_id)
        )
        .where(
            ACCESS_TOKEN,
            _token.c.revoked_at.is_(None),
            domain_rule,
            _user.c.disabled.is_(False),
        )
    )


def _api_key_claims(domain_rule: ColumnElement[bool]) -> Select[Any]:
    return (
        select(
            _api_key.c.secret_digest,
            _api_key.c.scopes,
            _api_key.c.created_at,
            _api_key.c.expires_at,
            _api_key.c.revoked_at,
            _api_key.c.permission,
            _api_key.c.last_used_at,
            _domain.c.host.label("aud"),
            _domain.c.profile,
            _user.c.disabled,
            *_USER_COLUMNS,
        )
        .select_from(
            _api_key.join(_user, _user.c.id == _api_key.c.user_id).join(_domain, _domain.c.id == _api_key.c.domain_id)
        )
        .where(_api_key.c.id == bindparam("key_id"), domain_rule)
    )


# The statements, with a default domain configured and without one (the same rule, cheaper:
# tenancy.REQUEST_HOST). Public for the tests and the benchmark that read their plans.
TOKEN_CLAIMS = _token_claims(REQUEST_DOMAIN)
TOKEN_CLAIMS_BY_HOST = _token_claims(REQUEST_HOST)
API_KEY_CLAIMS = _api_key_claims(REQUEST_DOMAIN)
API_KEY_CLAIMS_BY_HOST = _api_key_claims(REQUEST_HOST)

# Neither function needs a Flask request: the fast path calls them with the app's readers.


def token_claims(value: str, host: str, default_host: str | None, readers: Readers | None = None) -> TokenClaims | None:
    """The row of access token ``value`` if it is live in the domain of ``host`` (else ``default_host``), or None."""
    statement = TOKEN_CLAIMS if default_host else TOKEN_CLAIMS_BY_HOST
    row: TokenClaims | None = read_one(
        statement, {"digest": security.digest(value), "host": host, "default_host": default_host}, readers
    )
    return row


def api_key_claims(
    key_id: str, host: str, default_host: str | None, readers: Readers | None = None
) -> ApiKeyClaims | None:
    """The row of API key ``key_id`` in the domain of ``host`` (else ``default_host``), or None."""
    statement = API_KEY_CLAIMS if default_host else API_KEY_CLAIMS_BY_HOST
    row: ApiKeyClaims | None = read_one(
        statement, {"key_id": key_id, "host": host, "default_host": default_host}, readers
    )
    return row
