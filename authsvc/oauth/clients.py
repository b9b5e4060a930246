"""Applications as OAuth clients: how they authenticate, finding them in the request's domain, their lifetimes."""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc6749 import InvalidClientError, OAuth2Request
from authlib.oauth2.rfc6749.authenticate_client import authenticate_client_secret_basic as _client_secret_basic
from flask import g
from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import contains_eager, joinedload, lazyload

from authsvc.core.database import db
from authsvc.core.models import Application, Consent, Token
from authsvc.core.settings import settings
from authsvc.core.tenancy import REQUEST_DOMAIN, current_domain, request_domain_parameters

# Dynamic registration's endpoint (RFC 7591 3), here so that the metadata names it without
# loading authsvc.oauth.registration (and Authlib's RFC 7591, which loads joserfc and cryptography).
REGISTER_PATH = "/auth/oauth/register"
AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"]
# The methods by which a confidential application proves who it is (introspection, client_credentials).
CONFIDENTIAL_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]


# Built once (a statement made per request costs its construction and its cache key each time).
# The domain is known (and in the session's identity map): not joined again (Application.domain is lazy="joined").
_CLIENT_IN_DOMAIN = (
    select(Application)
    .options(lazyload(Application.domain))
    .where(Application.client_id == bindparam("client_id"), Application.domain_id == bindparam("domain_id"))
)
# The domain comes with the client, in one statement, and serves the rest of the request.
_CLIENT_WITH_DOMAIN = (
    select(Application)
    .join(Application.domain)
    .options(contains_eager(Application.domain))
    .where(Application.client_id == bindparam("client_id"), REQUEST_DOMAIN)
)


# The client credentials grant reads the client's service account next: it comes in the client's statement.
_CLIENT_IN_DOMAIN_WITH_ACCOUNT = _CLIENT_IN_DOMAIN.options(joinedload(Application.service_account))
_CLIENT_WITH_DOMAIN_AND_ACCOUNT = _CLIENT_WITH_DOMAIN.options(joinedload(Application.service_account))
_WITH_SERVICE_ACCOUNT = "authsvc_client_with_service_account"


def with_service_account() -> None:
    """Have this request's client read with its service account (a LEFT JOIN), not by a SELECT of its own."""
    setattr(g, _WITH_SERVICE_ACCOUNT, True)


def client_of_request_domain(client_id: str) -> Application | None:
    domain = g.get("authsvc_domain")
    account = g.get(_WITH_SERVICE_ACCOUNT, False)
    if domain is not None:
        statement = _CLIENT_IN_DOMAIN_WITH_ACCOUNT if account else _CLIENT_IN_DOMAIN
        return db.session.scalar(statement, {"client_id": client_id, "domain_id": domain.id})
    statement = _CLIENT_WITH_DOMAIN_AND_ACCOUNT if account else _CLIENT_WITH_DOMAIN
    application = db.session.scalar(statement, {"client_id": client_id, **request_domain_parameters()})
    if application is None:
        current_domain()  # an unknown host is a 404, not an unknown client
        return None
    g.authsvc_domain = application.domain
    return application


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


def delete_client(application: Application) -> int:
    """Delete the application with its tokens and approvals (not committed); how many of its tokens were live.

    The admin verbs and RFC 7592's DELETE both end an application this way.
    """
    live = Token.revoke_where(Token.application_id == application.id)
    db.session.execute(delete(Token).where(Token.application_id == application.id))
    db.session.execute(delete(Consent).where(Consent.application_id == application.id))
    db.session.delete(application)
    return live
