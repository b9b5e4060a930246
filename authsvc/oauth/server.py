"""The OAuth 2.0 authorisation server: request parsing, grants, PKCE, tokens.

Authlib does the protocol; this module registers the grants and endpoints,
shapes the platform's token response and adds the rules the platform puts on
top of the RFCs (docs/platform.md). Clients are found by authsvc.oauth.clients,
codes kept by authsvc.oauth.codes, and every token is written by
authsvc.tokens.issue.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from authlib.common.urls import add_params_to_uri
from authlib.integrations.flask_oauth2 import AuthorizationServer as _AuthorizationServer
from authlib.oauth2.rfc6749 import InvalidClientError, OAuth2Error
from flask import Flask, current_app
from flask import request as flask_request

from authsvc.core import clock, security
from authsvc.core.models import Application, User
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import access_tokens, backchannel, dpop, keys, oidc_request, profile, pushed, resources
from authsvc.oauth.clients import (
    access_token_ttl,
    authenticate_client_secret_basic,
    authenticate_private_key_jwt,
    basic_client_id,
    client_of_request_domain,
    identified,
    note_authentication,
    presented_auth_methods,
    refresh_token_ttl,
)
from authsvc.oauth.device import DeviceAuthorization, DeviceGrant
from authsvc.oauth.grants import PKCE, AuthorizationCodeGrant, ClientCredentialsGrant, PasswordGrant
from authsvc.oauth.id_jag import JwtBearerGrant
from authsvc.oauth.parameters import MergedRequest, grant_state
from authsvc.oauth.pushed import PushedAuthorization, resolve_authorization_request
from authsvc.oauth.refresh_grant import RefreshTokenGrant
from authsvc.oauth.revocation_introspection import IntrospectionEndpoint, RevocationEndpoint
from authsvc.oauth.token_exchange import TokenExchangeGrant
from authsvc.tokens import issue as tokens
from authsvc.tokens.issue import Issued
from authsvc.web import metrics

log = logging.getLogger(__name__)

# Authlib raises some errors without a description; every answer carries one.
DEFAULT_DESCRIPTIONS = {
    "unsupported_grant_type": (
        "grant_type must be authorization_code, refresh_token, client_credentials, password"
        ", urn:ietf:params:oauth:grant-type:device_code, urn:ietf:params:oauth:grant-type:token-exchange"
        " or urn:ietf:params:oauth:grant-type:jwt-bearer."
    ),
    "unsupported_response_type": "response_type must be code.",
    "invalid_grant": "The grant is invalid, expired, revoked or was issued to another client.",
    "invalid_scope": "The requested scope is not allowed for this application.",
    "invalid_client": "The client is unknown or did not authenticate.",
    "access_denied": "The request was denied.",
    "login_required": "The user must sign in, and 'prompt=none' allows no page.",
}


class AuthorizationServer(_AuthorizationServer):
    def handle_error_response(self, request: Any, error: OAuth2Error) -> Any:
        # An unknown host is a 404 whatever else is wrong with the request;
        # the token endpoint does not look its domain up before Authlib does.
        current_domain()
        if flask_request.endpoint == "oauth.authorize" and error.redirect_uri:
            # Answered to the client: the request is over, and what stood for it is spent (RFC 9126 4).
            pushed.spend_opened()
            oidc_request.spend_sign_in_note_of_request()
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
            # FAPI 2.0 5.3.2.2 item 11: 303, so that no browser repeats a POST (the consent form) there.
            if profile.fapi2(current_domain()):
                status = 303
        return super().handle_response(status, body, headers)

    def authenticate_client(self, request: Any, methods: list[str], endpoint: str = "token") -> Application:
        try:
            client = self._authenticate_client(request, methods, endpoint)
        except OAuth2Error:  # invalid_client, or an assertion refused as invalid_request
            note_authentication(False)
            raise
        # Its rate checked (a confidential client's request counted) before anything else: over it, 429.
        identified(client)
        # The client's own settings, checked once it has proved who it is.
        profile.check_client_request(client, request, endpoint)
        # The token endpoint's and PAR's proof, checked before the client was known (GrantState.dpop).
        proof = grant_state().dpop
        dpop.check_algorithm(client, proof)
        if endpoint == "token":
            dpop.refuse_missing_proof(client, proof)
        return client

    def _authenticate_client(self, request: Any, methods: list[str], endpoint: str) -> Application:
        # RFC 6749 2.3: a client MUST NOT use more than one authentication method in a request. Otherwise a
        # failing method (a wrong Basic secret) is skipped and another (an assertion of another client) wins.
        if len(presented_auth_methods(request)) > 1:
            basic = "client_secret_basic" in presented_auth_methods(request)
            raise InvalidClientError(
                status_code=401 if basic else 400,
                description="The request uses more than one client authentication method; use one (RFC 6749 2.3).",
            )
        body_client_id = request.payload.data.get("client_id")
        if body_client_id and basic_client_id(request) not in (None, body_client_id):
            # Two clients named: a failed Basic would be skipped and the body's public client ("none") win.
            raise InvalidClientError(
                status_code=401, description="The client_id in the body is not the one the Authorization header names."
            )
        return super().authenticate_client(request, methods, endpoint)

    def create_oauth2_request(self, request: Any) -> MergedRequest:
        return request if isinstance(request, MergedRequest) else MergedRequest()

    def create_token_response(self, request: Any = None) -> Any:
        # A DPoP proof is checked before any grant runs: a refused proof (a nonce to retry with) spends no code.
        request = self.create_oauth2_request(request)
        try:
            grant_state().dpop = dpop.request_proof()
        except OAuth2Error as error:
            return self.handle_error_response(request, error)
        return super().create_token_response(request)

    def query_client(self, client_id: str) -> Application | None:
        # HTTP Basic credentials bypass the parameter checks: a client_id with
        # control characters (NUL, which PostgreSQL refuses) is simply unknown.
        if not client_id.isascii() or not client_id.isprintable():
            return None
        # A client of another domain does not exist here (asked once a request: the answer is kept).
        return client_of_request_domain(client_id)

    def validate_requested_scope(self, scope: str | None) -> None:
        # Checked against the client in the grants; nothing server-wide.
        return None

    def save_token(self, token: dict[str, Any], request: MergedRequest) -> Issued:
        """Shape the token response (a JWT access token, DPoP's token type) and have the tokens issued.

        Every grant's tokens are issued the same way (authsvc.tokens.issue); the answer goes back to the
        grant, which alone knows what a refusal means to its client.
        """
        client: Application = request.client
        # A token for registered resources carries their scopes only (authsvc.oauth.resources).
        token["scope"] = resources.token_scope(token["scope"])
        # RFC 9449 5: a token request with a proof gets tokens bound to its key.
        state = grant_state()
        jkt = state.dpop.jkt if state.dpop is not None else None
        if client.jwt_access_tokens or state.jwt_access_token:
            # RFC 9068; the response carries it, the row its digest like an opaque token's. Signed before
            # anything is written: the domain's first key is made and committed on first need. A bound
            # token names its key (cnf.jkt, RFC 9449 6).
            token["access_token"] = access_tokens.issue(request, token, jkt=jkt)
        if state.id_token_follows and _names_openid(token["scope"]):
            # The ID token that follows (authsvc.oauth.oidc) is signed with the current key, read here, before
            # the token's write (its kid on a reader; the parsed key is kept per process), rather than after
            # the commit. Before any write: a domain's first key is made and committed on first need.
            keys.request_key(current_domain(), profile.id_token_algorithm(client, keys.DEFAULT_ALGORITHM))
        if jkt:
            token["token_type"] = "DPoP"
        grant_type = request.payload.grant_type
        issued = tokens.issue(
            tokens.Issue(
                client=client,
                user=request.user,
                grant_type=grant_type,
                access_token=token["access_token"],
                refresh_token=token.get("refresh_token"),
                scope=token["scope"],
                issued_at=token["created_at"],
                expires_in=token["expires_in"],
                refresh_ttl=refresh_token_ttl(client),
                lineage=state.lineage,
                dpop_jkt=jkt,
                audience=state.audience,
                resources=state.resources,
                act=state.act,
            )
        )
        if issued.outcome is tokens.Outcome.ISSUED:
            metrics.TOKENS_ISSUED.labels(grant_type=grant_type).inc()
        return issued


def id_tokens_in_code_grant(grant: Any) -> None:
    """Authlib's OpenIDCode with our keys and claims (authsvc.oauth.id_tokens), loaded at the first use of ``openid``.

    An authorisation request that asks for ``openid`` gets the whole extension
    (its nonce and ``prompt`` checks). Any other request of the code grant gets
    what the extension does for it, without loading it: OpenID Connect's
    request parameters read (oidc_request.read, for every client), and an ID
    token added to an exchange whose granted scope holds ``openid``. A worker
    that serves the code flow with opaque tokens only never loads JOSE.
    """
    grant_state().id_token_follows = True
    if _names_openid(grant.request.payload.scope):
        _id_tokens().code(grant)
        return
    grant.register_hook("after_validate_authorization_request_payload", oidc_request.read)
    grant.register_hook("after_create_token_response", _code_token_response)


def _names_openid(scope: Any) -> bool:
    # As Authlib's is_openid_scope reads it: a word of the space-separated scope.
    return "openid" in str(scope or "").split()


def _add_id_token(extension: str, grant: Any, response: Any) -> None:
    """An ID token in a token response whose granted scope names ``openid``, by the extension ``extension``."""
    _, token, _ = response
    if _names_openid(token.get("scope")):
        getattr(_id_tokens(), extension).process_token(grant, response)


_code_token_response = functools.partial(_add_id_token, "code")
_refresh_token_response = functools.partial(_add_id_token, "refresh")


def id_tokens_in_refresh_grant(grant: Any) -> None:
    """Authlib's OpenIDToken for refresh responses, loaded at the first refresh whose scope names ``openid``.

    OpenIDToken adds one hook to every refresh, which leaves a response whose
    scope lacks ``openid`` as it is; this one does the same without loading it.
    """
    grant_state().id_token_follows = True
    grant.register_hook("after_create_token_response", _refresh_token_response)


@functools.cache
def _id_tokens() -> Any:
    # Authlib's OIDC package loads joserfc and cryptography: about 10 MB a worker that
    # serves bearer tokens only does without (docs/performance.md, "Memory").
    from authsvc.oauth import id_tokens

    class Extensions:
        code = id_tokens.OpenIDCodeExtension()
        refresh = id_tokens.OpenIDRefreshExtension()

    return Extensions


class DeferredEndpoint:
    """An Authlib endpoint made at its first request: dynamic registration's (RFC 7591, 7592).

    Authlib's registration endpoints load joserfc and cryptography (about 10 MB,
    for software statements) in every worker; few ever see a registration.
    """

    def __init__(self, name: str, endpoint: str) -> None:
        self.ENDPOINT_NAME = name
        self._class_name = endpoint
        self.server: Any = None  # set by register_endpoint

    @functools.cached_property
    def endpoint(self) -> Any:
        from authsvc.oauth import registration

        return getattr(registration, self._class_name)(self.server)

    def create_endpoint_request(self, request: Any) -> Any:
        return self.endpoint.create_endpoint_request(request)

    def create_response(self, request: Any) -> Any:
        return self.endpoint.create_response(request)

    def __call__(self, request: Any) -> Any:
        return self.endpoint(request)


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
        "created_at": clock.now(),
    }
    if include_refresh_token:
        token["refresh_token"] = security.new_secret()
    return token


def init_app(app: Flask) -> None:
    """The app's own authorisation server, with its grants and endpoints (tests build many apps)."""
    server = AuthorizationServer(app)
    backchannel.init_app(app)
    server.register_token_generator("default", generate_token)
    server.register_grant(PasswordGrant)
    # The profile's rules first: a refusal under it names the profile's rule, not a narrower one.
    server.register_grant(
        AuthorizationCodeGrant,
        [profile.AuthorizationRequestRules(), PKCE(required=False), id_tokens_in_code_grant, dpop.CodeBinding()],
    )
    server.register_grant(RefreshTokenGrant, [id_tokens_in_refresh_grant])
    server.register_grant(DeviceGrant)
    server.register_grant(ClientCredentialsGrant)
    server.register_grant(TokenExchangeGrant)
    server.register_grant(JwtBearerGrant)
    server.register_client_auth_method("client_secret_basic", authenticate_client_secret_basic)
    server.register_client_auth_method("private_key_jwt", authenticate_private_key_jwt)
    server.register_endpoint(RevocationEndpoint)
    server.register_endpoint(IntrospectionEndpoint)
    server.register_endpoint(DeviceAuthorization)
    server.register_endpoint(DeferredEndpoint("client_registration", "ClientRegistration"))
    server.register_endpoint(DeferredEndpoint("client_configuration", "ClientConfiguration"))
    server.register_endpoint(PushedAuthorization)
    # Pushed requests (RFC 9126) and request objects (RFC 9101) stand in for the query.
    server.register_hook("before_get_authorization_grant", resolve_authorization_request)
    app.extensions["authsvc.authorization"] = server


def authorization_server() -> AuthorizationServer:
    """The current app's authorisation server."""
    return current_app.extensions["authsvc.authorization"]
