"""Upstream identity providers of a domain and the users' accounts there."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint, false, select
from sqlalchemy.orm import Mapped, mapped_column, relationship

from authsvc.core.database import Model, db, now


class SsoProvider(Model):
    """An external identity provider of a domain (OpenID Connect, plain OAuth 2.0 or SAML 2.0).

    ``id`` is the public identifier of ``/auth/oauth2?id=``. The client secret
    and a SAML provider's private key are kept encrypted (security.encrypt).
    ``kind`` is the protocol. A SAML provider keeps the IdP's entity id in
    ``client_id`` (what decides who an account there is) and an empty secret.
    """

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(10))  # the protocol: "oidc", "oauth2" or "saml"
    client_id: Mapped[str] = mapped_column(String(255))
    client_secret_encrypted: Mapped[str] = mapped_column(Text)
    issuer: Mapped[str | None] = mapped_column(String(500))
    authorize_url: Mapped[str | None] = mapped_column(String(500))
    token_url: Mapped[str | None] = mapped_column(String(500))
    userinfo_url: Mapped[str | None] = mapped_column(String(500))
    jwks_url: Mapped[str | None] = mapped_column(String(500))
    scopes: Mapped[str] = mapped_column(Text)
    # Scopes an operator needs granted (Microsoft Graph permissions); `sso check` compares.
    required_scopes: Mapped[str] = mapped_column(Text, default="")
    authorize_params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    token_endpoint_auth_method: Mapped[str] = mapped_column(String(30), default="client_secret_post")
    # Our user field -> provider claim names, tried in order.
    profile_mappings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Claim name -> allowed values; "email_domain" checks the mapped e-mail's domain.
    match_rules: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Link a first sign-in to an existing user with the same e-mail even when
    # the provider does not assert email_verified.
    trust_email: Mapped[bool] = mapped_column(Boolean, default=False)
    # Server-side requests may reach loopback, private networks and plain http
    # (an on-premises provider). Only a system admin (or the CLI) sets it.
    allow_private_network: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    preset: Mapped[str | None] = mapped_column(String(20))
    tenant: Mapped[str | None] = mapped_column(String(100))
    # SAML 2.0: the IdP's metadata (as given, or as last fetched from its URL),
    # our own key pair for this provider (signing requests, decrypting
    # assertions), and how strict the response checks are.
    saml_metadata_xml: Mapped[str | None] = mapped_column(Text)
    saml_metadata_url: Mapped[str | None] = mapped_column(String(500))
    saml_metadata_fetched_at: Mapped[int | None] = mapped_column(Integer)
    saml_sp_certificate: Mapped[str | None] = mapped_column(Text)
    saml_sp_key_encrypted: Mapped[str | None] = mapped_column(Text)
    saml_allow_unsolicited: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    saml_clock_skew: Mapped[int] = mapped_column(Integer, default=60, server_default="60")
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    @property
    def protocol(self) -> str:
        return self.kind

    @staticmethod
    def of_domain(domain_id: int) -> list[SsoProvider]:
        """The domain's providers, by name (the sign-in page's buttons)."""
        return list(
            db.session.scalars(select(SsoProvider).where(SsoProvider.domain_id == domain_id).order_by(SsoProvider.name))
        )

    def as_json(self) -> dict[str, Any]:
        if self.kind == "saml":
            return self._saml_json()
        return {
            "id": self.id,
            "domain": str(self.domain_id),
            "name": self.name,
            "kind": self.kind,
            "protocol": self.kind,
            "client_id": self.client_id,
            "issuer": self.issuer,
            "authorize_url": self.authorize_url,
            "token_url": self.token_url,
            "userinfo_url": self.userinfo_url,
            "scopes": self.scopes,
            "required_scopes": self.required_scopes,
            "authorize_params": dict(self.authorize_params),
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "profile_mappings": dict(self.profile_mappings),
            "match_rules": dict(self.match_rules),
            "trust_email": self.trust_email,
            "allow_private_network": self.allow_private_network,
            "preset": self.preset,
            "tenant": self.tenant,
        }

    def _saml_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "domain": str(self.domain_id),
            "name": self.name,
            "kind": self.kind,
            "protocol": self.kind,
            "idp_entity_id": self.client_id,
            "idp_metadata_url": self.saml_metadata_url,
            "idp_metadata_fetched_at": self.saml_metadata_fetched_at,
            "sp_certificate": self.saml_sp_certificate,
            "profile_mappings": dict(self.profile_mappings),
            "match_rules": dict(self.match_rules),
            "trust_email": self.trust_email,
            "allow_private_network": self.allow_private_network,
            "allow_unsolicited": self.saml_allow_unsolicited,
            "clock_skew": self.saml_clock_skew,
        }


class ExternalIdentity(Model):
    """A user's account at an SSO provider, with the provider's delegated tokens (encrypted)."""

    __table_args__ = (UniqueConstraint("provider_id", "subject"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    provider_id: Mapped[str] = mapped_column(ForeignKey("sso_provider.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"), index=True)
    subject: Mapped[str] = mapped_column(String(255))
    # How the link was made: "new_user" or "email" (automatic, by a first sign-in),
    # "user" (the account holder's own step) or "system_admin". A privileged
    # user signs in only through a link that was not automatic.
    via: Mapped[str] = mapped_column(String(20), default="email", server_default="email")
    access_token_encrypted: Mapped[str | None] = mapped_column(Text)
    refresh_token_encrypted: Mapped[str | None] = mapped_column(Text)
    expires_at: Mapped[int | None] = mapped_column(Integer)
    granted_scopes: Mapped[str] = mapped_column(Text, default="")
    # Set when the provider refused a refresh: the user must sign in again.
    needs_reauth: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    updated_at: Mapped[int] = mapped_column(Integer, default=now)

    provider: Mapped[SsoProvider] = relationship(lazy="joined")
