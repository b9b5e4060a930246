"""Tenants and their clients: domains and applications."""

from __future__ import annotations

from typing import Any, Literal, get_args

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false, true
from sqlalchemy.orm import Mapped, mapped_column, relationship

from authsvc.core import security
from authsvc.core.database import IDS_NEVER_REUSED, Model, now
from authsvc.core.marks import N_

DEFAULT_DOMAIN_SCOPES = "public mqtt.read mqtt.write"
DEVICE_CODE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
TOKEN_EXCHANGE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"  # RFC 8693
JWT_BEARER_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"  # RFC 7523 (ID-JAGs here)
ACCESS_TOKEN_OPAQUE, ACCESS_TOKEN_JWT = "opaque", "jwt"
AccessTokenFormat = Literal["opaque", "jwt"]
ACCESS_TOKEN_FORMATS: tuple[AccessTokenFormat, ...] = get_args(AccessTokenFormat)

# A domain's security profile: "standard", or "fapi2" (the FAPI 2.0 Security Profile for every
# application of the domain; its rules are authsvc.oauth.profile's, docs/fapi.md).
STANDARD_PROFILE = "standard"
FAPI2_PROFILE = "fapi2"
PROFILES = (STANDARD_PROFILE, FAPI2_PROFILE)

# Who may create an account at /auth/signup: nobody ("off", the default), anyone ("open"), or the owners of
# addresses at the domain's listed e-mail domains ("restricted"). docs/account.md, "Sign-up".
SIGNUP_OFF, SIGNUP_OPEN, SIGNUP_RESTRICTED = "off", "open", "restricted"
SIGNUP_MODES = (SIGNUP_OFF, SIGNUP_OPEN, SIGNUP_RESTRICTED)

# Which Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document) a domain reads: none ("off"),
# those of the listed hosts ("allowlist"), or any host's ("any", the default; every such client gets the
# consent page). authsvc.oauth.metadata_documents, docs/mcp.md.
CLIENT_METADATA_OFF, CLIENT_METADATA_ALLOWLIST, CLIENT_METADATA_ANY = "off", "allowlist", "any"
CLIENT_METADATA_MODES = (CLIENT_METADATA_OFF, CLIENT_METADATA_ALLOWLIST, CLIENT_METADATA_ANY)

# Scopes every domain knows, for surfaces that act with the user's powers;
# the consent page shows these descriptions (in the page's language).
RESERVED_SCOPES = {
    "admin": N_("Administer this domain with your admin or support rights: users, applications, API keys and SSO."),
    "resource_token": N_("Read your access tokens at external identity providers and act for you there."),
    "scim": N_("Provision this domain's users and groups over SCIM with your domain admin rights."),
    "ssf": N_("Receive this domain's security events (Shared Signals: sessions revoked, accounts disabled)."),
}


class Domain(Model):
    """A tenant (PlaceOS: an authority), found from the request's Host."""

    __table_args__ = IDS_NEVER_REUSED

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    host: Mapped[str] = mapped_column(String(253), unique=True)
    scopes: Mapped[str] = mapped_column(Text, default=DEFAULT_DOMAIN_SCOPES)
    # Seconds a sign-in session lasts here; None means AUTHSVC_SESSION_TTL.
    session_ttl: Mapped[int | None] = mapped_column(Integer)
    # Who must sign in with a second factor: "off", "admins" (admin and support users) or "all".
    mfa_require: Mapped[str] = mapped_column(String(10), default="off", server_default="off")
    profile: Mapped[str] = mapped_column(String(16), default=STANDARD_PROFILE, server_default=STANDARD_PROFILE)
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    # The last authenticated SCIM request (seconds; moved at most once a minute).
    scim_last_activity: Mapped[int | None] = mapped_column(Integer)
    # Changes with every change of its branding (authsvc.core.models.branding); None: the default look.
    # Read with the row, it keys the workers' cached brand: a page asks nothing more (authsvc.core.branding).
    branding_version: Mapped[int | None] = mapped_column(Integer)
    # Whether a sign-in from a browser not seen before for the user mails them a notice (docs/account.md).
    new_device_notice: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    signup: Mapped[str] = mapped_column(String(10), default=SIGNUP_OFF, server_default=SIGNUP_OFF)
    # Space-separated e-mail domains whose addresses may sign up under "restricted".
    signup_email_domains: Mapped[str] = mapped_column(Text, default="", server_default="")
    # Client ID Metadata Documents: the mode, the hosts of "allowlist" (space-separated), and a system admin's
    # exception for documents on loopback and private addresses (as for identity providers).
    client_metadata_documents: Mapped[str] = mapped_column(
        String(10), default=CLIENT_METADATA_ANY, server_default=CLIENT_METADATA_ANY
    )
    client_metadata_hosts: Mapped[str] = mapped_column(Text, default="", server_default="")
    client_metadata_allow_private_network: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Dynamic client registration (RFC 7591) without an initial access token, as MCP clients register.
    open_registration: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The event types its enabled webhooks take, space-separated; None when none (authsvc.webhooks.events). Read
    # with the row, so an audit record of any other type asks nothing more; written with each change of them.
    webhook_events: Mapped[str | None] = mapped_column(Text)

    @property
    def signup_open(self) -> bool:
        """Whether /auth/signup takes anyone's sign-up (of an allowed address)."""
        return self.signup != SIGNUP_OFF

    def signup_allows(self, email: str) -> bool:
        """Whether an address (in its stored form) may sign up here: sign-up is on, and under "restricted"
        the address's domain is one of the listed ones."""
        if self.signup == SIGNUP_OPEN:
            return True
        return self.signup == SIGNUP_RESTRICTED and email.rpartition("@")[2] in self.signup_email_domains.split()

    @property
    def scope_list(self) -> list[str]:
        return self.scopes.split()

    @property
    def fapi2(self) -> bool:
        return self.profile == FAPI2_PROFILE

    @property
    def assignable_scopes(self) -> list[str]:
        """What an application or API key of the domain may have: its scopes and the reserved ones."""
        return list(dict.fromkeys(self.scope_list + list(RESERVED_SCOPES)))

    def as_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "host": self.host,
            "scopes": self.scopes,
            "session_ttl": self.session_ttl,
            "mfa_require": self.mfa_require,
            "profile": self.profile,
            "scim_last_activity": self.scim_last_activity,
            "signup": self.signup,
            "signup_email_domains": self.signup_email_domains.split(),
            "new_device_notice": self.new_device_notice,
            "client_metadata_documents": self.client_metadata_documents,
            "client_metadata_hosts": self.client_metadata_hosts.split(),
            "client_metadata_allow_private_network": self.client_metadata_allow_private_network,
            "open_registration": self.open_registration,
        }


def _public(context: Any) -> bool:
    parameters = context.get_current_parameters()
    return parameters.get("client_secret_digest") is None and parameters.get("token_endpoint_auth_method") != (
        "private_key_jwt"
    )


class Application(Model):
    """An OAuth 2.0 client, listed under Domains -> Applications.

    A client whose client_id is the URL of its Client ID Metadata Document has a row too, per domain, made and
    refreshed from the document (``metadata_document_expires_at`` set; authsvc.oauth.metadata_documents): its
    tokens, codes and approvals refer to it as to any other.
    """

    __table_args__ = (
        # A generated client_id is unique by itself; a metadata document's URL is the client_id in every domain.
        Index("ix_application_client_id_domain_id", "client_id", "domain_id", unique=True),
        IDS_NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    client_id: Mapped[str] = mapped_column(String(2000))
    client_secret_digest: Mapped[str | None] = mapped_column(String(64))
    redirect_uris: Mapped[list[str]] = mapped_column(JSON, default=list)
    scopes: Mapped[str] = mapped_column(Text, default="public")
    consent: Mapped[bool] = mapped_column(Boolean, default=False)
    # RFC 9700 2.1.1: a public application requires PKCE unless created in the
    # legacy mode (require_pkce false) for clients that follow docs/platform.md's exchange literally.
    require_pkce: Mapped[bool] = mapped_column(Boolean, default=_public)
    allow_plain_pkce: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The device authorisation grant (RFC 8628), for screens without a keyboard.
    device: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    access_token_ttl: Mapped[int | None] = mapped_column(Integer)
    refresh_token_ttl: Mapped[int | None] = mapped_column(Integer)
    # OpenID Connect: how its ID tokens are signed (Authlib reads this name); None is RS256.
    id_token_signed_response_alg: Mapped[str | None] = mapped_column(String(10))
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    # The service account a confidential application's client_credentials tokens act as (docs/machines.md).
    service_account_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))
    # Client authentication at the token, revocation and introspection endpoints (RFC 7591 names):
    # None means the default for its kind (client_secret_basic or post when confidential, none when
    # public); "private_key_jwt" authenticates with a JWT signed by a key of jwks / jwks_uri (RFC 7523).
    token_endpoint_auth_method: Mapped[str | None] = mapped_column(String(32))
    jwks: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    jwks_uri: Mapped[str | None] = mapped_column(String(2000))
    # OpenID Connect RP-Initiated Logout 1.0 and Back-Channel Logout 1.0.
    post_logout_redirect_uris: Mapped[list[str] | None] = mapped_column(JSON)
    backchannel_logout_uri: Mapped[str | None] = mapped_column(String(2000))
    # Dynamic client registration (RFC 7591/7592): the grant types the client registered (None: an
    # admin's application, which may use every grant its settings allow), the initial access token it
    # registered with, and the digest of its registration access token (RFC 7592).
    grant_types: Mapped[list[str] | None] = mapped_column(JSON)
    registration_token_id: Mapped[str | None] = mapped_column(ForeignKey("registration_token.id"))
    registration_access_token_digest: Mapped[str | None] = mapped_column(String(64))
    # Registered without an initial access token (the domain's open registration): nobody vouches for it, so
    # the user is asked every time, as for a metadata document's client.
    openly_registered: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # A resource server: may introspect other applications' tokens (RFC 7662 2.1). Only an admin marks
    # one; a dynamically registered client never is one.
    introspect: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # RFC 9449 5.2: every token request must carry a DPoP proof; its tokens are bound to the proof's key.
    dpop_bound_access_tokens: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # RFC 9126 6: its authorisation requests must come through a pushed request (PAR); see authsvc.oauth.pushed.
    require_pushed_authorization_requests: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # "opaque" (a random string) or "jwt" (RFC 9068, signed with the domain's key); both are kept as digests.
    access_token_format: Mapped[str] = mapped_column(String(10), default="opaque", server_default="opaque")
    # The resources (RFC 8707) its tokens may be for; a token's audience is the ones it asked for.
    resources: Mapped[list[str] | None] = mapped_column(JSON)
    # A Client ID Metadata Document's client: until when its document, as last fetched, holds (seconds).
    metadata_document_expires_at: Mapped[int | None] = mapped_column(Integer)
    # Token exchange (RFC 8693): None when it may not exchange; else {"impersonation": bool, "refresh_tokens":
    # bool}: whether a token without ``act`` may be issued, and whether a refresh token comes with one.
    token_exchange: Mapped[dict[str, bool] | None] = mapped_column(JSON)

    domain: Mapped[Domain] = relationship(lazy="joined")
    service_account: Mapped[Any] = relationship("User")

    @property
    def metadata_document(self) -> bool:
        """Whether the client is a Client ID Metadata Document's: its client_id is the document's URL."""
        return self.metadata_document_expires_at is not None

    @property
    def confidential(self) -> bool:
        # A private_key_jwt application proves who it is with its keys: confidential, without a secret.
        return self.client_secret_digest is not None or self.private_key_jwt

    @property
    def private_key_jwt(self) -> bool:
        return self.token_endpoint_auth_method == "private_key_jwt"

    @property
    def scope_list(self) -> list[str]:
        return self.scopes.split()

    @property
    def jwt_access_tokens(self) -> bool:
        return self.access_token_format == ACCESS_TOKEN_JWT

    # Authlib's ClientMixin, spelled out.
    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        # Only an unambiguous registration may stand in for an omitted redirect_uri.
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        return scope or "public"

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        # Exact string comparison, as RFC 9700 2.1 asks: no prefix or pattern matching.
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret_digest is not None and security.digest_matches(
            client_secret, self.client_secret_digest
        )

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        # Registered keys replace the secret: no other method may stand in for them.
        if self.private_key_jwt:
            return method == "private_key_jwt"
        if method == "none":
            return not self.confidential
        if self.token_endpoint_auth_method in ("client_secret_basic", "client_secret_post"):
            # A registered client (RFC 7591 2) uses the method it registered; the console's use either.
            return self.confidential and method == self.token_endpoint_auth_method
        return self.confidential and method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        if self.grant_types is not None and grant_type not in self.grant_types:
            return False
        if grant_type == DEVICE_CODE_GRANT_TYPE:
            return self.device
        if grant_type == "client_credentials":
            return self.confidential and self.service_account_id is not None
        if grant_type == TOKEN_EXCHANGE_GRANT_TYPE:
            return self.confidential and self.token_exchange is not None
        if grant_type == JWT_BEARER_GRANT_TYPE:
            # An ID-JAG names its client (client_id), which must prove who it is.
            return self.confidential
        return grant_type in ("authorization_code", "password", "refresh_token")

    def as_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "domain": str(self.domain_id),
            "name": self.name,
            "client_id": self.client_id,
            "redirect_uris": list(self.redirect_uris),
            "scopes": self.scopes,
            "confidential": self.confidential,
            "consent": self.consent,
            "require_pkce": self.require_pkce,
            "allow_plain_pkce": self.allow_plain_pkce,
            "device": self.device,
            "access_token_ttl": self.access_token_ttl,
            "refresh_token_ttl": self.refresh_token_ttl,
            "service_account": str(self.service_account_id) if self.service_account_id else None,
            "id_token_signed_response_alg": self.id_token_signed_response_alg,
            "post_logout_redirect_uris": list(self.post_logout_redirect_uris or []),
            "backchannel_logout_uri": self.backchannel_logout_uri,
            "token_endpoint_auth_method": self.token_endpoint_auth_method
            or ("client_secret_basic" if self.confidential else "none"),
            "jwks_uri": self.jwks_uri,
            "jwks": self.jwks,
            "introspect": self.introspect,
            "dpop_bound_access_tokens": self.dpop_bound_access_tokens,
            "require_pushed_authorization_requests": self.require_pushed_authorization_requests,
            "access_token_format": self.access_token_format,
            "resources": list(self.resources or []),
            "token_exchange": dict(self.token_exchange) if self.token_exchange is not None else None,
            # The initial access token it registered itself with (RFC 7591), if it did.
            "registration_token": self.registration_token_id,
            "openly_registered": self.openly_registered,
            "created_at": self.created_at,
        }


class ResourceServer(Model):
    """A protected resource of the domain (RFC 8707, RFC 9728): a token asked for with its URI is for it alone
    (``aud``) and carries only its scopes (authsvc.oauth.resources)."""

    __table_args__ = (UniqueConstraint("domain_id", "uri"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    uri: Mapped[str] = mapped_column(String(2000))
    name: Mapped[str] = mapped_column(String(200))
    scopes: Mapped[str] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "domain": str(self.domain_id),
            "uri": self.uri,
            "name": self.name,
            "scopes": self.scopes,
            "created_at": self.created_at,
        }
