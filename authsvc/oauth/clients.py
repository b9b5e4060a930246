"""Applications as OAuth clients at a request: authenticating them, finding them in its domain, their lifetimes.

Authenticating: the methods the server registers (HTTP Basic refusing what it cannot parse;
private_key_jwt, loaded from authsvc.oauth.private_key_jwt at the first assertion), the methods a
request carries credentials for (the server allows one a request) and its outcome, noted for the
limiter. Which method and keys an application may have is authsvc.oauth.client_authentication's;
a private_key_jwt client's keys are authsvc.oauth.client_assertion_keys'.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from authlib.oauth2.rfc6749 import InvalidClientError, OAuth2Request
from authlib.oauth2.rfc6749.authenticate_client import authenticate_client_secret_basic as _client_secret_basic
from authlib.oauth2.rfc6749.util import extract_basic_authorization
from sqlalchemy import ColumnElement, FromClause, Integer, Select, Table, bindparam, select
from sqlalchemy.orm.attributes import set_committed_value

from authsvc.core import dependents, tenancy
from authsvc.core.database import db
from authsvc.core.models import Application, Domain, User
from authsvc.core.readers import entities
from authsvc.core.readers.pool import read_one
from authsvc.core.request_state import part
from authsvc.core.settings import settings
from authsvc.core.tenancy import REQUEST_DOMAIN, REQUEST_HOST, current_domain, request_domain_parameters
from authsvc.tokens import revocation

# Dynamic registration's endpoint (RFC 7591 3), here so that the metadata names it without
# loading authsvc.oauth.registration (and Authlib's RFC 7591, which loads joserfc and cryptography).
REGISTER_PATH = "/auth/oauth/register"
AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"]
# A client_id that is a URL names a Client ID Metadata Document (authsvc.oauth.metadata_documents); a
# generated client_id never is one.
METADATA_DOCUMENT_SCHEMES = ("https://", "http://")
# The methods by which a confidential application proves who it is (introspection, client_credentials).
CONFIDENTIAL_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]


# The client is read as one row (its domain, and its service account when asked for) on
# inspect's readers and made into the session's entities (authsvc.core.readers.entities): the ORM's
# execution of the same statement was a third of a token request's CPU (docs/performance.md,
# "Third pass"). Nothing is cached: every request reads the client.
_client, _domain, _user = (cast(Table, m.__table__) for m in (Application, Domain, User))
_CLIENT_KEYS, _DOMAIN_KEYS = entities.keys(_client), entities.keys(_domain)
_CLIENT_COLUMNS, _DOMAIN_COLUMNS = entities.columns(_client, "a_"), entities.columns(_domain, "d_")


def _client_statement(domain: ColumnElement[bool] | None, account: bool) -> Select[Any]:
    """The client by ``client_id``: read with its domain, which the rule ``domain`` finds by the request's host;
    with None, of the domain the session holds already (``domain_id``)."""
    source: FromClause
    if domain is None:  # the domain is in the session: its id is the condition, and nothing of it is read
        columns, source = _CLIENT_COLUMNS, _client
        condition = _client.c.domain_id == bindparam("domain_id", type_=Integer)
    else:
        columns, source = (
            (*_CLIENT_COLUMNS, *_DOMAIN_COLUMNS),
            _client.join(_domain, _domain.c.id == _client.c.domain_id),
        )
        condition = domain
    if account:
        columns = (*columns, *entities.USER_COLUMNS)
        source = source.outerjoin(_user, _user.c.id == _client.c.service_account_id)
    return select(*columns).select_from(source).where(_client.c.client_id == bindparam("client_id"), condition)


# Built once (a statement made per request costs its construction and its cache key each time), by how the
# domain is found: "known" (in the session), "host" (no default domain configured: tenancy.REQUEST_HOST, without
# REQUEST_DOMAIN's subquery, an index probe of the domain table more a request at 10,000 domains; bench/README.md,
# "Ten thousand domains") or "default" (REQUEST_DOMAIN).
_DOMAIN_RULES: dict[str, ColumnElement[bool] | None] = {"known": None, "host": REQUEST_HOST, "default": REQUEST_DOMAIN}
_STATEMENTS = {
    (rule, account): _client_statement(condition, account)
    for rule, condition in _DOMAIN_RULES.items()
    for account in (True, False)
}


@dataclass
class ClientRequest:
    """What a request notes about its client (authsvc.core.request_state.part)."""

    # Read with its service account (a LEFT JOIN): the client credentials grant's.
    with_service_account: bool = False
    # Whether the request authenticated its client: True, False (it tried and failed) or None (it did not try).
    authenticated: bool | None = None
    # Authlib asks for the client more than once a request: each client_id's answer, looked up once.
    by_id: dict[str, Application | None] = field(default_factory=dict)


def with_service_account() -> None:
    """Have this request's client read with its service account (a LEFT JOIN), not by a SELECT of its own."""
    part(ClientRequest).with_service_account = True


def client_of_request_domain(client_id: str) -> Application | None:
    """The client ``client_id`` of the request's domain, or None; asked once a request (the answer is kept)."""
    by_id = part(ClientRequest).by_id
    if client_id not in by_id:
        found = _client_of_request_domain(client_id)
        if client_id.startswith(METADATA_DOCUMENT_SCHEMES):
            # A Client ID Metadata Document's client: its row while the document holds, else the document anew.
            # Loaded at the first such client: it loads RFC 7591's rules (joserfc, cryptography) and requests.
            from authsvc.oauth import metadata_documents

            found = metadata_documents.client(current_domain(), client_id, found)
        by_id[client_id] = found
    return by_id[client_id]


def _client_of_request_domain(client_id: str) -> Application | None:
    domain = tenancy.domain_found()
    account = part(ClientRequest).with_service_account
    parameters: dict[str, str | None]
    if domain is not None:
        rule, parameters = "known", {"client_id": client_id, "domain_id": str(domain.id)}
    else:
        parameters = {"client_id": client_id, **request_domain_parameters()}
        rule = "default" if parameters["default_host"] else "host"
    session = db.session()
    if session.new or session.dirty:
        session.flush()  # as the ORM's query would (autoflush): the read sees this request's changes
    row = read_one(_STATEMENTS[rule, account], parameters)
    if row is None:
        if domain is None:
            current_domain()  # an unknown host is a 404, not an unknown client
        return None
    if domain is None:
        domain = entities.entity(Domain, row, "d_", _DOMAIN_KEYS)[0]
        tenancy.found(domain)
    application, made = entities.entity(Application, row, "a_", _CLIENT_KEYS)
    if made:
        # Its relationships loaded, as a joined load leaves them (the session holds its entities weakly:
        # the application's references keep them).
        set_committed_value(application, "domain", domain)
        if account:
            account_entity = entities.entity(User, row, "u_", entities.USER_KEYS)[0] if row.u_id is not None else None
            set_committed_value(application, "service_account", account_entity)
    return cast(Application, application)


def note_authentication(succeeded: bool) -> None:
    """Keep whether this request authenticated its client (a failure stays a failure: the request's answer)."""
    noted = part(ClientRequest)
    if not succeeded or noted.authenticated is None:
        noted.authenticated = succeeded


# Called with whether the client is confidential once a view knows its client (``identified``): the request
# rates register their check of the client's rate here (authsvc.app.limits), which may refuse the request (429).
_IDENTIFIED: list[Callable[[bool], None]] = []


def when_identified(hook: Callable[[bool], None]) -> None:
    """Call ``hook`` with whether the client is confidential whenever a view has identified its client."""
    if hook not in _IDENTIFIED:
        _IDENTIFIED.append(hook)


def identified(client: Application) -> None:
    """The view knows its client: a confidential one authenticated, a public one named (it proves nothing).

    Only a confidential client is "authenticated" for the request rates: anyone could spend a public
    client's rate with made-up codes (authsvc.app.limits). The hooks (``when_identified``) run here,
    before the grant does anything, and may refuse the request.
    """
    if client.confidential:
        note_authentication(True)
    for hook in _IDENTIFIED:
        hook(client.confidential)


def client_authenticated() -> bool | None:
    """Whether this request authenticated its client: True, False (it tried and failed) or None (it did not try).

    The request rates read it after the view (authsvc.app.limits): only an authenticated client's
    requests count against that client, so that nobody locks a client out by naming it.
    """
    return part(ClientRequest).authenticated


def access_token_ttl(client: Application) -> int:
    """An application's own access token lifetime, else the global one."""
    return client.access_token_ttl or settings().access_token_ttl


def refresh_token_ttl(client: Application) -> int:
    """An application's own refresh token (grant) lifetime, else the global one."""
    return client.refresh_token_ttl or settings().refresh_token_ttl


def authenticate_client_secret_basic(query_client: Any, request: OAuth2Request) -> Application | None:
    """Authlib's HTTP Basic client authentication, refusing credentials it cannot parse.

    Authlib lets a UnicodeDecodeError (not UTF-8) or a ValueError (an empty
    "Basic ", base64 with non-ASCII characters) out, which would be a 500.
    """
    try:
        return _client_secret_basic(query_client, request)
    except UnicodeDecodeError:
        raise InvalidClientError(status_code=401, description="The Basic credentials are not UTF-8.") from None
    except ValueError:
        raise InvalidClientError(status_code=401, description="The Basic credentials are malformed.") from None


def basic_client_id(request: Any) -> str | None:
    """The client_id of the request's Basic credentials; None without them (or when they cannot be read:
    the Basic method refuses those itself)."""
    try:
        return extract_basic_authorization(request.headers)[0] or None
    except (ValueError, TypeError):  # UnicodeDecodeError, bad base64
        return None


# RFC 7523 2.2's client_assertion_type, as Authlib's JWTBearerClientAssertion checks it.
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def authenticate_private_key_jwt(query_client: Any, request: Any) -> Application | None:
    """private_key_jwt (authsvc.oauth.private_key_jwt), loaded at the first request that carries an assertion.

    Authlib's RFC 7523 and joserfc load cryptography: about 10 MB that a worker
    which never sees an assertion does without. A request without one passes
    on (None), as Authlib's own method answers it.
    """
    data = request.form
    if data.get("client_assertion_type") != CLIENT_ASSERTION_TYPE or not data.get("client_assertion"):
        return None
    return _private_key_jwt()(query_client, request)


@functools.cache
def _private_key_jwt() -> Any:
    from authsvc.oauth.private_key_jwt import PrivateKeyJWT

    return PrivateKeyJWT()


def presented_auth_methods(request: Any) -> list[str]:
    """The client authentication methods a request carries credentials for (RFC 7591 names)."""
    data = request.payload.data
    found = []
    if request.headers.get("Authorization", "").lower().startswith("basic"):
        found.append("client_secret_basic")
    if "client_secret" in data:
        found.append("client_secret_post")
    if "client_assertion" in data or "client_assertion_type" in data:
        found.append("private_key_jwt")
    return found


def delete_client(application: Application) -> int:
    """Delete the application with its tokens and approvals (not committed); how many of its tokens were live.

    The admin verbs and RFC 7592's DELETE both end an application this way.
    """
    live = revocation.delete_of_application(application.id)
    dependents.delete_referrers("application", application.id)  # its approvals
    db.session.delete(application)
    return live
