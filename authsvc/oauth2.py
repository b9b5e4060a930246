"""The OAuth 2.0 authorisation server: request parsing, grants, PKCE, tokens.

Authlib does the protocol; this module supplies storage (SQL for clients and
tokens, Redis for codes), the spec's token response and the rules the spec
and DESIGN.md add on top of the RFCs.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from authlib.common.urls import add_params_to_uri
from authlib.integrations.flask_oauth2 import AuthorizationServer as _AuthorizationServer
from authlib.oauth2.rfc6749 import (
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    OAuth2Error,
    OAuth2Payload,
    OAuth2Request,
    grants,
)
from authlib.oauth2.rfc6749.authenticate_client import authenticate_client_secret_basic as _client_secret_basic
from authlib.oauth2.rfc7636 import CodeChallenge
from flask import Flask, current_app, g
from flask import request as flask_request
from sqlalchemy import select, update
from sqlalchemy.orm import contains_eager

from authsvc import accounts, audit, metrics, security, store, validation
from authsvc.database import db, now
from authsvc.models import Application, Token, User
from authsvc.tenancy import REQUEST_DOMAIN, current_domain, issuer, request_domain_parameters

log = logging.getLogger(__name__)

AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

# DESIGN.md: the spec sends the code exchange in the query string, so these
# may come from there; credentials never may (they would land in access logs).
QUERY_PARAMETERS = {"grant_type", "code", "client_id", "redirect_uri", "code_verifier", "scope", "refresh_token"}
# A token to revoke or introspect is a secret too.
SECRET_PARAMETERS = {"client_secret", "password", "token"}
# Values that Authlib may quote in an error description, which RFC 6749
# limits to %x20-21 / %x23-5B / %x5D-7E.
_QUOTED_PARAMETERS = {"response_type", "grant_type", "redirect_uri", "client_id", "code_challenge_method"}
_FREE_TEXT_PARAMETERS = {"username", "password"}


def _quoted(name: str) -> str:
    """A parameter's name for an error description, which allows only some ASCII.

    Names are the client's input too: one that could not be quoted would turn
    a 400 into a failure to render the error.
    """
    if 0 < len(name) <= 40 and all(0x20 <= ord(c) <= 0x7E and c not in "\"\\'" for c in name):
        return f"'{name}'"
    return "A parameter"


def _check_value(name: str, value: str) -> None:
    if name in _FREE_TEXT_PARAMETERS:
        if any(ord(c) < 0x20 and c not in "\t" for c in value):
            raise InvalidRequestError(f"{_quoted(name)} contains control characters.")
        return
    for c in value:
        code = ord(c)
        if code < 0x20 or code > 0x7E or (name in _QUOTED_PARAMETERS and c in '"\\'):
            raise InvalidRequestError(f"{_quoted(name)} contains characters that are not allowed.")


def read_parameters() -> dict[str, list[str]]:
    """Merge the query string, a form body and a JSON body into one parameter set.

    RFC 6749 3.1: no parameter may be sent more than once, across all three.
    At the token endpoint only QUERY_PARAMETERS are read from the query string.
    """
    values: dict[str, list[str]] = defaultdict(list)
    query_limited = flask_request.endpoint == "oauth.token"
    for name in flask_request.args:
        if name in SECRET_PARAMETERS:
            raise InvalidRequestError(f"{_quoted(name)} must not be sent in the query string.")
        if name in QUERY_PARAMETERS or not query_limited:
            values[name].extend(flask_request.args.getlist(name))
    if flask_request.mimetype == "application/json":
        try:
            body = validation.json_object(flask_request.get_data(cache=True))
        except validation.Invalid as exc:
            raise InvalidRequestError(str(exc)) from None
        for name, value in body.items():
            if value is None:  # null is missing (validation.json_body)
                continue
            if not isinstance(value, str):
                raise InvalidRequestError(f"{_quoted(name)} must be a string.")
            values[name].append(value)
    else:
        for name in flask_request.form:
            values[name].extend(flask_request.form.getlist(name))
    for name, items in values.items():
        if len(items) > 1:
            raise InvalidRequestError(f"{_quoted(name)} is sent more than once.")
        _check_value(name, items[0])
    return values


class MergedPayload(OAuth2Payload):
    def __init__(self, datalist: dict[str, list[str]]):
        self._datalist = datalist

    @cached_property
    def data(self) -> dict[str, str]:
        return {name: items[0] for name, items in self._datalist.items()}

    @property
    def datalist(self) -> dict[str, list[str]]:
        return self._datalist


class MergedRequest(OAuth2Request):
    """An OAuth2Request whose payload merges query string, form and JSON."""

    def __init__(self) -> None:
        super().__init__(flask_request.method, flask_request.url, headers=flask_request.headers)
        self.payload = MergedPayload(read_parameters())
        # Set by the refresh grant: the new tokens join the old one's grant.
        self.family: str | None = None
        self.grant_expires_at: int | None = None
        # Set by the code grant: the code this request spent, checked for a replay once its tokens are saved.
        self.spent_code: str | None = None

    @property
    def args(self) -> dict[str, str]:
        return self.payload.data

    @property
    def form(self) -> dict[str, str]:
        return self.payload.data


def resolve_scope(client: Application, requested: str | None) -> str:
    """The granted scope: ``public`` when none is asked; every asked scope must be the client's."""
    asked = list(dict.fromkeys((requested or "public").split()))
    if not asked or not set(asked) <= set(client.scope_list):
        raise InvalidScopeError("Every requested scope must be one configured on the application.")
    return " ".join(asked)


@dataclass
class AuthorizationCode:
    """A claimed code, as read back from Redis."""

    user_id: int
    client_id: int
    redirect_uri: str | None
    scope: str
    code_challenge: str | None
    code_challenge_method: str | None
    family: str

    def get_redirect_uri(self) -> str | None:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


# Authlib raises some errors without a description; every answer carries one.
DEFAULT_DESCRIPTIONS = {
    "unsupported_grant_type": "grant_type must be password, authorization_code or refresh_token.",
    "unsupported_response_type": "response_type must be code.",
    "invalid_grant": "The grant is invalid, expired, revoked or was issued to another client.",
    "invalid_scope": "The requested scope is not allowed for this application.",
    "invalid_client": "The client is unknown or did not authenticate.",
    "access_denied": "The request was denied.",
}


class AuthorizationServer(_AuthorizationServer):
    def handle_error_response(self, request: Any, error: OAuth2Error) -> Any:
        # An unknown host is a 404 whatever else is wrong with the request;
        # the token endpoint does not look its domain up before Authlib does.
        current_domain()
        if not error.description:
            error.description = DEFAULT_DESCRIPTIONS.get(error.error, "The request was refused.")
        return super().handle_error_response(request, error)

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> Any:
        # RFC 9207: every authorisation response, code or error, names its issuer,
        # the same as RFC 8414's (per domain, the origin the request came to).
        if flask_request.endpoint == "oauth.authorize" and status == 302:
            headers = [
                (name, add_params_to_uri(value, [("iss", issuer())]) if name == "Location" else value)
                for name, value in headers
            ]
        return super().handle_response(status, body, headers)

    def create_oauth2_request(self, request: Any) -> MergedRequest:
        return MergedRequest()

    def query_client(self, client_id: str) -> Application | None:
        # HTTP Basic credentials bypass the parameter checks: a client_id with
        # control characters (NUL, which PostgreSQL refuses) is simply unknown.
        if not client_id.isascii() or not client_id.isprintable():
            return None
        # A client of another domain does not exist here. Authlib asks more than
        # once per request; the answer is kept in this request's environ only.
        memo = flask_request.environ.setdefault("authsvc.clients", {})
        if client_id not in memo:
            memo[client_id] = _client_of_request_domain(client_id)
        return memo[client_id]

    def validate_requested_scope(self, scope: str | None) -> None:
        # Checked against the client in the grants; nothing server-wide.
        return None

    def save_token(self, token: dict[str, Any], request: MergedRequest) -> None:
        client: Application = request.client
        issued = token["created_at"]
        access_expires_at = issued + token["expires_in"]
        refresh_expires_at = grant_expires_at = None
        if token.get("refresh_token"):
            # The grant's end is set once, at the authorisation, and carried
            # across rotation; each refresh token also ends after the idle time.
            grant_expires_at = request.grant_expires_at or issued + refresh_token_ttl(client)
            refresh_expires_at = grant_expires_at
            idle = current_app.config["AUTHSVC_REFRESH_IDLE_TTL"]
            if idle > 0:
                refresh_expires_at = min(grant_expires_at, issued + idle)
        row = Token(
            application_id=client.id,
            user_id=request.user.id if request.user else None,
            access_token_digest=security.digest(token["access_token"]),
            refresh_token_digest=security.digest(token["refresh_token"]) if grant_expires_at else None,
            family=request.family or security.new_secret(),
            grant_type=request.payload.grant_type,
            scope=token["scope"],
            issued_at=issued,
            expires_in=token["expires_in"],
            refresh_expires_at=refresh_expires_at,
            grant_expires_at=grant_expires_at,
            purgeable_at=max(access_expires_at, refresh_expires_at or 0),
        )
        db.session.add(row)
        db.session.flush()
        grant_type = request.payload.grant_type
        # One transaction: a token is never saved without its audit record, nor the other way round.
        audit.record(
            "token.refreshed" if grant_type == "refresh_token" else "token.issued",
            domain_id=client.domain_id,
            actor=f"user:{request.user.id}" if request.user else f"client:{client.client_id}",
            target=f"token:{row.id}",
            details={"grant_type": grant_type, "client_id": client.client_id, "scope": token["scope"]},
            commit=False,
        )
        db.session.commit()
        metrics.TOKENS_ISSUED.labels(grant_type=grant_type).inc()
        if request.spent_code and store.code_replayed(request.spent_code):
            # A replay raced this exchange and may have revoked before these tokens were committed.
            _revoke_replayed(client, row.family)


def _revoke_replayed(client: Application, family: str) -> None:
    revoked = Token.revoke_family(family)
    audit.record(
        "code.replayed",
        domain_id=client.domain_id,
        actor=f"client:{client.client_id}",
        details={"revoked": revoked},
        commit=False,
    )
    db.session.commit()
    log.warning("authorization code replayed; revoked %d token(s) of its grant", revoked)


def _client_of_request_domain(client_id: str) -> Application | None:
    domain = g.get("authsvc_domain")
    if domain is not None:
        return db.session.scalar(
            select(Application).where(Application.client_id == client_id, Application.domain_id == domain.id)
        )
    # The domain comes with the client, in one statement, and serves the rest of the request.
    application = db.session.scalar(
        select(Application)
        .join(Application.domain)
        .options(contains_eager(Application.domain))
        .where(Application.client_id == client_id, REQUEST_DOMAIN),
        request_domain_parameters(),
    )
    if application is None:
        current_domain()  # an unknown host is a 404, not an unknown client
        return None
    g.authsvc_domain = application.domain
    return application


def access_token_ttl(client: Application) -> int:
    """An application's own access token lifetime, else the global one."""
    return client.access_token_ttl or current_app.config["AUTHSVC_ACCESS_TOKEN_TTL"]


def refresh_token_ttl(client: Application) -> int:
    """An application's own refresh token (grant) lifetime, else the global one."""
    return client.refresh_token_ttl or current_app.config["AUTHSVC_REFRESH_TOKEN_TTL"]


def generate_token(
    grant_type: str,
    client: Application,
    user: User | None = None,
    scope: str | None = None,
    expires_in: int | None = None,
    include_refresh_token: bool = True,
) -> dict[str, Any]:
    """The spec's token response: lower-case ``bearer`` and an integer ``created_at``."""
    token = {
        "access_token": security.new_secret(),
        "token_type": "bearer",
        "expires_in": expires_in or access_token_ttl(client),
        "scope": scope or "public",
        "created_at": int(time.time()),
    }
    if include_refresh_token:
        token["refresh_token"] = security.new_secret()
    return token


class PasswordGrant(grants.ResourceOwnerPasswordCredentialsGrant):
    """For service accounts only (SPEC 4.1); JSON or form body."""

    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def validate_token_request(self) -> None:
        client = self.authenticate_token_endpoint_client()
        params = self.request.form
        for name in ("username", "password"):
            if not params.get(name):
                raise InvalidRequestError(f"Missing '{name}' in request.")
        domain = current_domain()
        user = accounts.authenticate(domain, params["username"], params["password"], via="password_grant")
        if user is None:
            raise InvalidGrantError("The username or password is incorrect.")
        if user.disabled:
            accounts.refused(domain, user, "disabled", "password_grant")
            raise InvalidGrantError("The account is disabled.")
        if not user.service_account:
            accounts.refused(domain, user, "not_a_service_account", "password_grant")
            raise InvalidGrantError("The password grant is only for service accounts; use the authorization code flow.")
        self.request.client = client
        self.request.user = user
        self.request.scope = resolve_scope(client, params.get("scope"))

    def create_token_response(self) -> tuple[int, dict, list]:
        token = self.generate_token(user=self.request.user, scope=self.request.scope)
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def validate_requested_scope(self) -> None:
        self.request.scope = resolve_scope(self.request.client, self.request.payload.scope)

    def save_authorization_code(self, code: str, request: MergedRequest) -> None:
        data = request.payload.data
        store.save_code(
            code,
            {
                "user": request.user.id,
                "client": request.client.id,
                "redirect_uri": data.get("redirect_uri"),
                "scope": request.scope,
                "code_challenge": data.get("code_challenge"),
                "code_challenge_method": data.get("code_challenge_method"),
            },
            current_app.config["AUTHSVC_CODE_TTL"],
        )

    def generate_authorization_code(self) -> str:
        # Authlib's default draws each of 48 characters with its own urandom call.
        return security.new_secret()

    def query_authorization_code(self, code: str, client: Application) -> AuthorizationCode | None:
        # RFC 6749 4.1.2: a code used twice revokes what it produced, whatever the timing.
        # The replay is recorded before the family is revoked, and the exchange that
        # spent the code checks for it after committing its tokens (save_token): if
        # that check ran before the record, its commit came before this revocation,
        # which then finds the tokens.
        family = security.new_secret()
        spent_ttl = current_app.config["AUTHSVC_SPENT_CODE_TTL"]
        data = store.claim_code(code, family, spent_ttl)
        if data is None:
            spent_family = store.spent_code_family(code)
            if spent_family:
                store.record_code_replay(code, spent_ttl)
                _revoke_replayed(client, spent_family)
            return None
        if data["client"] != client.id:
            return None
        self.request.family = family
        self.request.spent_code = code
        return AuthorizationCode(
            user_id=data["user"],
            client_id=data["client"],
            redirect_uri=data["redirect_uri"],
            scope=data["scope"],
            code_challenge=data["code_challenge"],
            code_challenge_method=data["code_challenge_method"],
            family=family,
        )

    def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
        # Already gone: claiming it deleted it.
        return None

    def authenticate_user(self, authorization_code: AuthorizationCode) -> User | None:
        user = db.session.get(User, authorization_code.user_id)
        if user is None or user.disabled or user.domain_id != current_domain().id:
            return None
        return user


class RefreshTokenGrant(grants.RefreshTokenGrant):
    """Refresh with rotation: every refresh token is good for one exchange."""

    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        token = Token.find_by_refresh_token(refresh_token)
        if token is None or token.revoked_at is not None or token.application.domain_id != current_domain().id:
            return None
        if token.refresh_expires_at is None or now() >= token.refresh_expires_at:
            return None
        if token.refreshed_at is not None:
            self._spent_token_reused(token)
            return None
        return token

    def _spent_token_reused(self, token: Token) -> None:
        # Inside the grace window a retry or a race between two tabs is the
        # likely cause: refuse it but keep the family. Outside, assume theft.
        within_grace = now() - token.refreshed_at <= current_app.config["AUTHSVC_REFRESH_REUSE_GRACE"]
        revoked = 0 if within_grace else Token.revoke_family(token.family)
        audit.record(
            "refresh_token.reused",
            domain_id=token.application.domain_id,
            actor=f"client:{token.application.client_id}",
            target=f"token:{token.id}",
            details={"within_grace": within_grace, "revoked": revoked},
            commit=False,
        )
        db.session.commit()
        if not within_grace:
            log.warning("spent refresh token reused; revoked %d token(s) of its family", revoked)

    def validate_token_request(self) -> None:
        super().validate_token_request()
        token: Token = self.request.refresh_token
        # Claim the refresh token in the transaction that saves its successor:
        # of two concurrent exchanges exactly one updates the row.
        claimed = db.session.execute(
            update(Token)
            .where(Token.id == token.id, Token.refreshed_at.is_(None), Token.revoked_at.is_(None))
            .values(refreshed_at=now())
        ).rowcount
        if claimed != 1:
            db.session.rollback()
            raise InvalidGrantError("The refresh token has already been used.")
        self.request.family = token.family
        self.request.grant_expires_at = token.grant_expires_at

    def authenticate_user(self, refresh_token: Token) -> User | None:
        user = refresh_token.user
        return None if user is None or user.disabled else user

    def revoke_old_credential(self, refresh_token: Token) -> None:
        # Claimed in validate_token_request already.
        return None


class PKCE(CodeChallenge):
    """RFC 7636 as RFC 9700 2.1.1 has it: S256; plain only where the application allows it.

    An application that requires PKCE (every public one, unless created in the
    legacy mode) must name its method: RFC 7636 would take an omitted method
    as plain, which such an application would then have accepted silently.
    """

    def validate_code_challenge(self, grant: AuthorizationCodeGrant, redirect_uri: str) -> None:
        super().validate_code_challenge(grant, redirect_uri)
        client: Application = grant.request.client
        data = grant.request.payload.data
        method = data.get("code_challenge_method")
        if not data.get("code_challenge"):
            if client.require_pkce:
                raise InvalidRequestError("This application requires PKCE: send 'code_challenge' with S256.")
            return
        if method is None and client.require_pkce:
            raise InvalidRequestError("This application requires 'code_challenge_method': send S256.")
        if (method or self.DEFAULT_CODE_CHALLENGE_METHOD) == "plain" and not client.allow_plain_pkce:
            raise InvalidRequestError("'code_challenge_method' must be S256: this application does not allow plain.")


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


authorization = AuthorizationServer()


def init_app(app: Flask) -> None:
    app.config.setdefault("AUTHSVC_SPENT_CODE_TTL", 24 * 3600)
    authorization.init_app(app)
    authorization.register_token_generator("default", generate_token)
    authorization.register_grant(PasswordGrant)
    authorization.register_grant(AuthorizationCodeGrant, [PKCE(required=False)])
    authorization.register_grant(RefreshTokenGrant)
    authorization.register_client_auth_method("client_secret_basic", authenticate_client_secret_basic)
