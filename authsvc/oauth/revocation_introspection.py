"""The standard endpoints around the token endpoint: revocation and introspection.

RFC 7009 and RFC 7662, on Authlib's endpoint classes. Each looks
tokens up by the unique index on their digest, within the request's domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from authlib.oauth2.rfc6749 import InvalidRequestError, OAuth2Request
from authlib.oauth2.rfc6750 import InsufficientScopeError
from authlib.oauth2.rfc7009 import RevocationEndpoint as _RevocationEndpoint
from authlib.oauth2.rfc7662 import IntrospectionEndpoint as _IntrospectionEndpoint

from authsvc.api import credentials, lookup
from authsvc.core import actors, audit
from authsvc.core.database import db
from authsvc.core.models import Application, Token
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth.clients import AUTH_METHODS, CONFIDENTIAL_AUTH_METHODS
from authsvc.tokens import lookups, revocation

# Resource servers introspect as confidential clients; a public client has
# nothing to prove who it is, so it may not read other clients' tokens.
INTROSPECTION_AUTH_METHODS = CONFIDENTIAL_AUTH_METHODS


@dataclass
class PresentedToken:
    """A token row as one of its two tokens: the access token or the refresh token."""

    row: Token
    kind: str  # "access_token" or "refresh_token"

    def check_client(self, client: Application) -> bool:
        return self.row.application_id == client.id

    def is_revoked(self) -> bool:
        return self.row.revoked_at is not None

    def is_expired(self) -> bool:
        if self.kind == "refresh_token":
            # A spent (rotated) refresh token can never be exchanged again.
            return not self.row.refresh_is_active()
        return not self.row.is_active()

    @property
    def expires_at(self) -> int:
        if self.kind == "refresh_token":
            # Found by its refresh token's digest: a row that has a refresh token has its end.
            return cast(int, self.row.refresh_expires_at)
        return self.row.expires_at


def find_token(value: str, hint: str | None) -> PresentedToken | None:
    """The token ``value`` of the request's domain, trying the hinted type first.

    RFC 7009 2.1: when the hint is wrong the search goes on across every type.
    """
    kinds = ["access_token", "refresh_token"]
    if hint == "refresh_token":
        kinds.reverse()
    domain = current_domain()
    for kind in kinds:
        row = lookups.access_token(value) if kind == "access_token" else lookups.refresh_token(value)
        if row is not None and row.application.domain_id == domain.id:
            return PresentedToken(row, kind)
    return None


def check_token_parameter(request: OAuth2Request) -> None:
    """``token`` is required. An unknown ``token_type_hint`` is ignored, as RFC 7009 2.1 allows.

    (Authlib would answer it with a 401 ``unsupported_token_type``, an error
    RFC 7009 keeps for token types a server cannot revoke.)
    """
    if not request.form.get("token"):
        raise InvalidRequestError("Missing 'token' in request.")


class RevocationEndpoint(_RevocationEndpoint):
    """RFC 7009. Public clients identify with client_id; confidential ones authenticate."""

    CLIENT_AUTH_METHODS = AUTH_METHODS

    def check_params(self, request: OAuth2Request, client: Application) -> None:
        check_token_parameter(request)

    def query_token(self, token_string: str, token_type_hint: str | None) -> PresentedToken | None:
        return find_token(token_string, token_type_hint)

    def authenticate_token(self, request: OAuth2Request, client: Application) -> PresentedToken | None:
        self.check_params(request, client)
        token = self.query_token(request.form["token"], request.form.get("token_type_hint"))
        # Another client's token gets the same 200 as an unknown one and stays
        # as it was: the answer tells nobody which tokens exist.
        if token is None or not token.check_client(client):
            return None
        return token

    def revoke_token(self, token: PresentedToken, request: OAuth2Request) -> None:
        if token.kind == "refresh_token":
            # RFC 7009 2.1: revoking a refresh token revokes the access tokens
            # of the same grant, which is the token family under rotation.
            revoked = revocation.revoke_family(token.row.family)
        else:
            # The row holds the access token and the refresh token issued
            # with it; the client asked for this grant's access to end.
            revoked = revocation.revoke_token(token.row.id)
        if revoked:
            audit.record(
                "token.revoked",
                domain_id=token.row.application.domain_id,
                actor=actors.of_client(token.row.application.client_id),
                target=f"token:{token.row.id}",
                details={"count": revoked, "via": "revocation", "token_type": token.kind},
                commit=False,
            )
        db.session.commit()


class IntrospectionEndpoint(_IntrospectionEndpoint):
    """RFC 7662, for confidential clients of the domain (their own tokens; a resource server's, any) and for
    admin credentials."""

    CLIENT_AUTH_METHODS = INTROSPECTION_AUTH_METHODS

    def check_params(self, request: OAuth2Request, client: Application | None) -> None:
        check_token_parameter(request)

    def authenticate_endpoint_client(self, request: OAuth2Request) -> Application | None:
        if _client_authenticates(request) or not lookup.presented():
            return super().authenticate_endpoint_client(request)
        # An admin's bearer token or an admin API key of this domain, with the admin scope.
        credential = lookup.authenticate(current_domain())
        if not credential.admin:
            raise InsufficientScopeError(description="Introspection needs an admin or a confidential client.")
        lookup.require_scopes(credential, "admin")
        request.client = None
        return None

    def check_permission(self, token: PresentedToken, client: Application | None, request: OAuth2Request) -> bool:
        # find_token only finds tokens of this domain. An admin of the domain (client None) may read any;
        # a client its own, and another's only as a resource server an admin marked (never a registered
        # client). Otherwise the token is inactive to it, as RFC 7662 2.2 allows: nothing is revealed.
        if client is None or token.check_client(client):
            return True
        return client.introspect and client.registration_token_id is None

    def query_token(self, token_string: str, token_type_hint: str | None) -> PresentedToken | None:
        return find_token(token_string, token_type_hint)

    def create_introspection_payload(self, token: PresentedToken | None) -> dict[str, Any]:
        if token is None or token.is_revoked() or token.is_expired():
            return {"active": False}
        user = token.row.user
        if user is not None and user.disabled:
            return {"active": False}
        return self.introspect_token(token)

    def introspect_token(self, token: PresentedToken) -> dict[str, Any]:
        row = token.row
        domain = current_domain()
        payload: dict[str, Any] = {
            "active": True,
            "scope": row.scope,
            "client_id": row.application.client_id,
            # An access token is a bearer token or a DPoP-bound one; a refresh
            # token is not one, and a resource server must not take it for one.
            "token_type": _token_type(token),
            "exp": token.expires_at,
            "iat": row.issued_at,
            "aud": credentials.audience_claim(row.audience, domain.host),
            "iss": issuer(),
        }
        if row.user is not None:
            payload["sub"] = str(row.user.id)
            payload["username"] = row.user.email
        if row.dpop_jkt:
            # RFC 9449 6.2: the key the token is bound to; a resource server checks the proof against it.
            payload["cnf"] = {"jkt": row.dpop_jkt}
        if row.act:
            payload["act"] = row.act  # RFC 8693 4.1
        return payload


def _token_type(token: PresentedToken) -> str:
    if token.kind == "refresh_token":
        return "refresh_token"
    return "DPoP" if token.row.dpop_jkt else "bearer"


def _client_authenticates(request: OAuth2Request) -> bool:
    header = request.headers.get("Authorization", "")
    data = request.payload.data
    return header.lower().startswith("basic ") or "client_secret" in data or "client_assertion" in data
