"""Applications (OAuth 2.0 clients): creating one and changing one."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from authsvc.admin.schemas.answers import DECIMAL_ID, EPOCH, Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import (
    DOMAIN_SCOPES,
    TRIMMED,
    DomainId,
    Each,
    Lifetime,
    Name,
    Omissible,
    StringList,
    Text,
)
from authsvc.core import validation
from authsvc.core.models import AccessTokenFormat
from authsvc.oauth.keys import Algorithm as IdTokenAlgorithm

RedirectUris = Annotated[
    StringList,
    Each(validation.redirect_uri),
    Field(
        description="Absolute URIs without a fragment, compared exactly; plain http only for loopback hosts. Not "
        "empty, unless the application has a service account (client credentials redirect nowhere).",
    ),
]
Scopes = Annotated[
    str,
    Text(2000),
    DOMAIN_SCOPES,
    Field(
        description="Space-separated scopes, each known to the domain or reserved (`admin`: the admin API; "
        "`resource_token`: delegated provider tokens; `scim`: SCIM provisioning with client credentials for a "
        "bound domain admin account; `ssf`: a Shared Signals receiver); default `public`."
    ),
]
ServiceAccount = Annotated[
    str, Text(20), Field(description="The id of a service account of the domain; a confidential application only.")
]


class TokenExchange(Schema):
    """What an application may do by token exchange (RFC 8693), within its scopes and resources."""

    impersonation: bool = Field(
        default=False,
        description="May a token without an actor token be issued without `act` (impersonation)? Otherwise the "
        "application itself is named as the actor.",
    )
    refresh_tokens: bool = Field(default=False, description="Whether an exchanged token comes with a refresh token.")


class ApplicationChange(Schema):
    """Only the fields given change; `confidential` and `client_id` cannot be changed. `jwks` / `jwks_uri` change
    only on a private_key_jwt application (key rotation)."""

    name: Omissible[Name] = None
    redirect_uris: Omissible[RedirectUris] = None
    scopes: Omissible[Scopes] = None
    consent: Omissible[bool] = Field(default=None, description="Ask the user to approve the scopes (default false).")
    require_pkce: Omissible[bool] = None
    allow_plain_pkce: Omissible[bool] = None
    device: Omissible[bool] = Field(default=None, description="May use the device authorisation grant (RFC 8628).")
    introspect: Omissible[bool] = Field(
        default=None,
        description="A resource server: may introspect other applications' tokens (RFC 7662). A confidential "
        "application an admin created only, never a dynamically registered client. Default false.",
    )
    dpop_bound_access_tokens: Omissible[bool] = Field(
        default=None,
        description="Require DPoP (RFC 9449) for every token request: its tokens are all bound to the proof's key. "
        "Default false.",
    )
    require_pushed_authorization_requests: Omissible[bool] = Field(
        default=None,
        description="Its authorisation requests must be pushed first (PAR, RFC 9126): /auth/oauth/authorize "
        "takes only a request_uri from /auth/oauth/par. Default false.",
    )
    access_token_ttl: Lifetime | None = None
    refresh_token_ttl: Lifetime | None = None
    access_token_format: Omissible[Annotated[AccessTokenFormat, TRIMMED]] = Field(
        default=None,
        description="`opaque` (default): random strings; `jwt`: JWT access tokens (RFC 9068) signed with the "
        "domain's key (its JWKS). Either kind is revocable: the service keeps its digest.",
    )
    resources: Annotated[StringList, Each(validation.resource_indicator)] | None = Field(
        default=None,
        description="The resources (RFC 8707 `resource`) its tokens may be for: absolute URIs without a fragment. "
        "A token asked for some has them as its audience; null or [] for none.",
    )
    service_account: ServiceAccount | None = Field(default=None, description="null unbinds.")
    token_exchange: TokenExchange | None = Field(
        default=None,
        description="May exchange tokens (RFC 8693) at the token endpoint, with this policy; null: may not. A "
        "confidential application an admin created only.",
    )
    id_token_signed_response_alg: Annotated[IdTokenAlgorithm, TRIMMED] | None = Field(
        default=None, description="How its ID tokens are signed (OpenID Connect); null for the default, RS256."
    )
    post_logout_redirect_uris: Annotated[StringList, Each(validation.redirect_uri)] | None = Field(
        default=None,
        description="Absolute URIs without a fragment, by the rules of redirect_uris; null or [] for none.",
    )
    backchannel_logout_uri: Annotated[str, Text(2000, rule=validation.backchannel_logout_uri)] | None = Field(
        default=None,
        description="An absolute https URL without a fragment (plain http only for loopback hosts); null for none.",
    )
    # A JWKS as the client gives it: the keys are checked after (authsvc.oauth.client_authentication).
    jwks: Omissible[dict[str, Any]] = Field(
        default=None,
        description="The application's public signing keys (a JWKS: RSA of 2048 to 8192 bits or EC keys, no private "
        "members, at most 10), for private_key_jwt (RFC 7523). Makes it a confidential application without a secret.",
    )
    jwks_uri: Omissible[Annotated[str, Text(2000)]] = Field(
        default=None,
        description="Where the service fetches the application's JWKS (https, public address unless "
        "AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS), for private_key_jwt. Exclusive with `jwks`.",
    )


class ApplicationCreate(ApplicationChange):
    """A new application of the domain. `redirect_uris` is required unless `service_account` is given."""

    name: Name
    domain: Omissible[DomainId] = None
    confidential: Omissible[bool] = Field(
        default=None, description="Give it a client secret (shown once, in the answer). Default false."
    )


# Answers


class Application(Answer):
    id: str = Field(description=DECIMAL_ID)
    domain: str = Field(description="The domain's id.")
    name: str
    client_id: str
    redirect_uris: list[str]
    scopes: str = Field(description="Space-separated scopes the application may ask for.")
    confidential: bool = Field(
        description="Whether it authenticates: with a client secret or, for private_key_jwt, with its keys."
    )
    consent: bool = Field(description="Whether users approve it on a consent page.")
    require_pkce: bool = Field(
        description="Refuse authorisation requests without an S256 code_challenge. Default: true for a public "
        "application; false is the legacy mode for clients that send the specification's flow literally."
    )
    allow_plain_pkce: bool = Field(
        description="Also accept code_challenge_method=plain (RFC 9700 2.1.1: avoid). Default false."
    )
    device: bool = Field(description="Whether it may use the device authorisation grant (RFC 8628). Default false.")
    introspect: bool = Field(
        default=False,
        description="Whether it is a resource server, which may introspect other applications' tokens (RFC 7662); "
        "any application may introspect its own.",
    )
    dpop_bound_access_tokens: bool = Field(
        default=False,
        description="Whether every token request must carry a DPoP proof (RFC 9449), its tokens all bound to the key.",
    )
    require_pushed_authorization_requests: bool = Field(
        default=False,
        description="Whether its authorisation requests must be pushed first (PAR, RFC 9126). Default false.",
    )
    access_token_ttl: int | None = Field(description="Seconds; null for the default.")
    refresh_token_ttl: int | None = Field(description="Seconds; null for the default.")
    access_token_format: AccessTokenFormat = Field(default="opaque", description="`opaque` or `jwt` (RFC 9068).")
    resources: list[str] = Field(
        default_factory=list, description="The resources (RFC 8707) its tokens may be for; the token's audience."
    )
    service_account: str | None = Field(
        description="The id of the service account its client_credentials tokens act as; null when unbound."
    )
    token_exchange: TokenExchange | None = Field(
        default=None, description="Its token exchange policy (RFC 8693); null when it may not exchange."
    )
    id_token_signed_response_alg: IdTokenAlgorithm | None = Field(
        description="How its ID tokens are signed; null is RS256."
    )
    post_logout_redirect_uris: list[str] = Field(
        description="Where RP-initiated logout may send the user back (OpenID Connect); matched exactly."
    )
    backchannel_logout_uri: str | None = Field(
        description="Receives a Logout Token by POST when a session it received an ID token in ends."
    )
    created_at: int = Field(description=EPOCH)
    token_endpoint_auth_method: str = Field(
        description="How it authenticates at the token, revocation and introspection endpoints (RFC 7591 names): "
        "client_secret_basic or client_secret_post (its secret: a registered client by the method it registered, "
        "an application an admin created by either), private_key_jwt (a signed client assertion, RFC 7523) or "
        "none (public)."
    )
    jwks_uri: str | None
    jwks: dict[str, Any] | None
    registration_token: str | None = Field(
        default=None,
        description="The initial access token the application registered itself with (dynamic client "
        "registration, RFC 7591); null for an application an admin created.",
    )
    openly_registered: bool = Field(
        default=False,
        description="Whether it registered itself without an initial access token (the domain's "
        "`open_registration`): its users are asked every time it asks them.",
    )


class CreatedApplication(Application):
    client_secret: Omissible[str] = Field(
        default=None, description="A confidential application's client secret, shown this once."
    )


class ApplicationList(Page):
    items: list[Application]


class RegeneratedSecret(Application):
    client_secret: str = Field(description="The new client secret, shown this once; the old one no longer works.")
