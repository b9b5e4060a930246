"""What the service keeps in SQL: domains, applications, users, tokens, API keys.

Secrets (client secrets, tokens, API key secrets) are stored only as digests;
passwords as bcrypt hashes. Ids are integers here and strings in every JSON
answer.
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ColumnElement,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    delete,
    false,
    select,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from authsvc import security
from authsvc.database import db, now

DEFAULT_DOMAIN_SCOPES = "public mqtt.read mqtt.write"

# Scopes every domain knows, for surfaces that act with the user's powers;
# the consent page shows these descriptions.
RESERVED_SCOPES = {
    "admin": "Administer this domain with your admin or support rights: users, applications, API keys and SSO.",
    "resource_token": "Read your access tokens at external identity providers and act for you there.",
}


class Domain(db.Model):
    """A tenant (PlaceOS: an authority), found from the request's Host."""

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    host: Mapped[str] = mapped_column(String(253), unique=True)
    scopes: Mapped[str] = mapped_column(Text, default=DEFAULT_DOMAIN_SCOPES)
    # Seconds a sign-in session lasts here; None means AUTHSVC_SESSION_TTL.
    session_ttl: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    @property
    def scope_list(self) -> list[str]:
        return self.scopes.split()

    @property
    def assignable_scopes(self) -> list[str]:
        """What an application or API key of the domain may have: its scopes and the reserved ones."""
        return list(dict.fromkeys(self.scope_list + list(RESERVED_SCOPES)))

    def as_json(self) -> dict:
        return {
            "id": str(self.id),
            "name": self.name,
            "host": self.host,
            "scopes": self.scopes,
            "session_ttl": self.session_ttl,
        }


def _public(context: Any) -> bool:
    return context.get_current_parameters().get("client_secret_digest") is None


class Application(db.Model):
    """An OAuth 2.0 client, listed under Domains -> Applications."""

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    client_id: Mapped[str] = mapped_column(String(64), unique=True)
    client_secret_digest: Mapped[str | None] = mapped_column(String(64))
    redirect_uris: Mapped[list[str]] = mapped_column(JSON, default=list)
    scopes: Mapped[str] = mapped_column(Text, default="public")
    consent: Mapped[bool] = mapped_column(Boolean, default=False)
    # RFC 9700 2.1.1: a public application requires PKCE unless created in the
    # legacy mode (require_pkce false) for clients that follow the spec's flow literally.
    require_pkce: Mapped[bool] = mapped_column(Boolean, default=_public)
    allow_plain_pkce: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    access_token_ttl: Mapped[int | None] = mapped_column(Integer)
    refresh_token_ttl: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    domain: Mapped[Domain] = relationship(lazy="joined")

    @property
    def confidential(self) -> bool:
        return self.client_secret_digest is not None

    @property
    def scope_list(self) -> list[str]:
        return self.scopes.split()

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
        if method == "none":
            return not self.confidential
        return self.confidential and method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "password", "refresh_token")

    def as_json(self) -> dict:
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
            "access_token_ttl": self.access_token_ttl,
            "refresh_token_ttl": self.refresh_token_ttl,
            "created_at": self.created_at,
        }


class User(db.Model):
    __table_args__ = (UniqueConstraint("domain_id", "email"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"))
    # Stored lower-cased, which makes the unique constraint case-insensitive.
    email: Mapped[str] = mapped_column(String(320))
    name: Mapped[str] = mapped_column(String(200), default="")
    password_hash: Mapped[str | None] = mapped_column(String(100))
    service_account: Mapped[bool] = mapped_column(Boolean, default=False)
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    support: Mapped[bool] = mapped_column(Boolean, default=False)
    groups: Mapped[list[str]] = mapped_column(JSON, default=list)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    # An admin who administers every domain of the service, not only their own.
    system_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Sessions started before this moment (milliseconds) are refused: set on
    # a password change or when the user is disabled.
    sessions_valid_after: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    def set_password(self, password: str) -> None:
        self.password_hash = security.hash_password(password)

    def check_password(self, password: str) -> bool:
        return security.check_password(password, self.password_hash)

    def get_user_id(self) -> int:
        return self.id

    @property
    def permissions(self) -> int:
        """PlaceOS permission bits: 1 support, 2 admin."""
        return (1 if self.support else 0) | (2 if self.admin else 0)

    def as_json(self) -> dict:
        return {
            "id": str(self.id),
            "email": self.email,
            "name": self.name,
            "domain": str(self.domain_id),
            "service_account": self.service_account,
            "admin": self.admin,
            "support": self.support,
            "groups": list(self.groups),
            "disabled": self.disabled,
            "system_admin": self.system_admin,
        }


class Token(db.Model):
    """An issued access token and its refresh token, held as digests.

    Tokens from one authorisation (a code, or a password grant) share a
    ``family``; rotation adds to it and reuse of a spent refresh token revokes
    all of it.
    """

    __table_args__ = (
        Index("ix_token_family", "family"),
        # Unique, and on PostgreSQL covering what credentials._TOKEN_CLAIMS reads of the
        # token: the inspect lookup is an index-only scan however large the table grows.
        Index(
            "ix_token_access_token_digest",
            "access_token_digest",
            unique=True,
            postgresql_include=["application_id", "user_id", "scope", "issued_at", "expires_in", "revoked_at"],
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("application.id"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"), index=True)
    access_token_digest: Mapped[str] = mapped_column(String(64))
    refresh_token_digest: Mapped[str | None] = mapped_column(String(64), unique=True)
    family: Mapped[str] = mapped_column(String(64))
    grant_type: Mapped[str] = mapped_column(String(40))
    scope: Mapped[str] = mapped_column(Text)
    issued_at: Mapped[int] = mapped_column(Integer, default=now)
    expires_in: Mapped[int] = mapped_column(Integer)
    # The refresh token's own end: the grant's end or its idle limit, whichever comes first.
    refresh_expires_at: Mapped[int | None] = mapped_column(Integer)
    # The end of the whole grant: no refresh token of the family outlives it.
    grant_expires_at: Mapped[int | None] = mapped_column(Integer)
    # Set when the refresh token was exchanged for a new pair (rotation).
    refreshed_at: Mapped[int | None] = mapped_column(Integer)
    revoked_at: Mapped[int | None] = mapped_column(Integer)
    # From this moment the row serves nothing (both tokens expired, or revoked)
    # and `tokens purge` may delete it; indexed so that finding them never scans.
    purgeable_at: Mapped[int] = mapped_column(Integer, index=True)

    application: Mapped[Application] = relationship(lazy="joined")
    user: Mapped[User | None] = relationship(lazy="joined")

    @property
    def expires_at(self) -> int:
        return self.issued_at + self.expires_in

    def is_active(self, at: int | None = None) -> bool:
        return self.revoked_at is None and (at or now()) < self.expires_at

    def refresh_is_active(self, at: int | None = None) -> bool:
        """Whether the refresh token may still be exchanged: live, unspent, not expired."""
        return (
            self.refresh_expires_at is not None
            and self.revoked_at is None
            and self.refreshed_at is None
            and (at or now()) < self.refresh_expires_at
        )

    # Authlib's TokenMixin, for the refresh grant.
    def check_client(self, client: Application) -> bool:
        return self.application_id == client.id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return self.expires_in

    def is_expired(self) -> bool:
        return now() >= self.expires_at

    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def get_user(self) -> User | None:
        return self.user

    def get_client(self) -> Application:
        return self.application

    # Lookups by a presented value go through the unique index on its digest.
    @staticmethod
    def find_by_access_token(value: str) -> Token | None:
        return db.session.scalar(select(Token).where(Token.access_token_digest == security.digest(value)))

    @staticmethod
    def find_by_refresh_token(value: str) -> Token | None:
        return db.session.scalar(select(Token).where(Token.refresh_token_digest == security.digest(value)))

    @staticmethod
    def revoke_where(*conditions: ColumnElement[bool]) -> int:
        """Revoke every live token that meets ``conditions``; return how many there were.

        Every revocation goes through here, so that a revoked row also becomes
        purgeable at once. The caller commits.
        """
        moment = now()
        result = db.session.execute(
            update(Token).where(*conditions, Token.revoked_at.is_(None)).values(revoked_at=moment, purgeable_at=moment)
        )
        return result.rowcount

    @staticmethod
    def purge_batch(before: int, limit: int) -> tuple[int, int]:
        """Delete up to ``limit`` rows purgeable before ``before``; return (expired, revoked) counts.

        Finds them through the index on ``purgeable_at`` and deletes by primary
        key. Rows another transaction holds locked are skipped (PostgreSQL), so
        a purge never waits on live traffic. The caller commits.
        """
        rows = db.session.execute(
            select(Token.id, Token.revoked_at)
            .where(Token.purgeable_at < before)
            .order_by(Token.purgeable_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        ).all()
        if not rows:
            return 0, 0
        db.session.execute(delete(Token).where(Token.id.in_([row.id for row in rows])))
        revoked = sum(1 for row in rows if row.revoked_at is not None)
        return len(rows) - revoked, revoked

    @staticmethod
    def revoke_family(family: str) -> int:
        """Revoke every token of ``family`` (one authorisation grant); return how many were live."""
        return Token.revoke_where(Token.family == family)

    @staticmethod
    def revoke_for_user(user_id: int) -> int:
        return Token.revoke_where(Token.user_id == user_id)


API_KEY_PERMISSIONS = ("user", "support", "admin")


def capped_permissions(level: str, bits: int) -> int:
    """A user's permission ``bits`` as an API key of ``level`` may use them."""
    if level == "admin":
        return bits
    if level == "support":
        return 1 if bits else 0
    return 0


class ApiKey(db.Model):
    """A long-lived credential of a user, presented as ``<id>.<secret>``.

    ``permission`` caps what the key may do on the user's behalf: a ``user``
    key of an admin carries no admin bit, and an ``admin`` key of a user who
    is no longer admin carries none either.
    """

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    secret_digest: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[str] = mapped_column(Text, default="public")
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    expires_at: Mapped[int | None] = mapped_column(Integer)
    revoked_at: Mapped[int | None] = mapped_column(Integer)
    permission: Mapped[str] = mapped_column(String(10), default="user", server_default="user")
    # Updated at most once a minute (credentials.LAST_USED_RESOLUTION), not on every request.
    last_used_at: Mapped[int | None] = mapped_column(Integer)

    user: Mapped[User] = relationship(lazy="joined")

    @classmethod
    def issue(
        cls, user: User, name: str, scopes: str, permission: str = "user", expires_at: int | None = None
    ) -> tuple[ApiKey, str]:
        """A new key for ``user`` and the value shown once, ``<id>.<secret>``; only a digest is kept."""
        if permission == "admin" and not user.admin:
            raise ValueError(f"{user.email} is not an admin; an admin key needs one")
        if permission == "support" and not (user.admin or user.support):
            raise ValueError(f"{user.email} is neither support nor admin; a support key needs one")
        secret = security.new_secret()
        key = cls(
            id=secrets.token_hex(8),
            domain_id=user.domain_id,
            user_id=user.id,
            name=name,
            secret_digest=security.digest(secret),
            scopes=scopes,
            permission=permission,
            expires_at=expires_at,
        )
        return key, f"{key.id}.{secret}"

    def is_active(self, at: int | None = None) -> bool:
        at = at or now()
        return self.revoked_at is None and (self.expires_at is None or at < self.expires_at)

    @property
    def permissions(self) -> int:
        """The user's permission bits, capped by the key's level."""
        return capped_permissions(self.permission, self.user.permissions)

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "user": str(self.user_id),
            "domain": str(self.domain_id),
            "scopes": self.scopes,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "permission": self.permission,
            "last_used_at": self.last_used_at,
            "revoked": self.revoked_at is not None,
        }


class Consent(db.Model):
    """A user's approval of an application for a set of scopes (applications created with --consent)."""

    __table_args__ = (UniqueConstraint("user_id", "application_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"))
    application_id: Mapped[int] = mapped_column(ForeignKey("application.id"), index=True)
    scopes: Mapped[str] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    application: Mapped[Application] = relationship(lazy="joined")

    def covers(self, scope: str) -> bool:
        return set(scope.split()) <= set(self.scopes.split())


class SsoProvider(db.Model):
    """An external identity provider of a domain (OpenID Connect or plain OAuth 2.0).

    ``id`` is the public identifier of ``/auth/oauth2?id=``. The client secret
    is kept encrypted (security.encrypt).
    """

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(10))  # "oidc" or "oauth2"
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
    authorize_params: Mapped[dict] = mapped_column(JSON, default=dict)
    token_endpoint_auth_method: Mapped[str] = mapped_column(String(30), default="client_secret_post")
    # Our user field -> provider claim names, tried in order.
    profile_mappings: Mapped[dict] = mapped_column(JSON, default=dict)
    # Claim name -> allowed values; "email_domain" checks the mapped e-mail's domain.
    match_rules: Mapped[dict] = mapped_column(JSON, default=dict)
    # Link a first sign-in to an existing user with the same e-mail even when
    # the provider does not assert email_verified.
    trust_email: Mapped[bool] = mapped_column(Boolean, default=False)
    # Server-side requests may reach loopback, private networks and plain http
    # (an on-premises provider). Only a system admin (or the CLI) sets it.
    allow_private_network: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    preset: Mapped[str | None] = mapped_column(String(20))
    tenant: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "domain": str(self.domain_id),
            "name": self.name,
            "kind": self.kind,
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


class ExternalIdentity(db.Model):
    """A user's account at an SSO provider, with the provider's delegated tokens (encrypted)."""

    __table_args__ = (UniqueConstraint("provider_id", "subject"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    provider_id: Mapped[str] = mapped_column(ForeignKey("sso_provider.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"), index=True)
    subject: Mapped[str] = mapped_column(String(255))
    access_token_encrypted: Mapped[str | None] = mapped_column(Text)
    refresh_token_encrypted: Mapped[str | None] = mapped_column(Text)
    expires_at: Mapped[int | None] = mapped_column(Integer)
    granted_scopes: Mapped[str] = mapped_column(Text, default="")
    # Set when the provider refused a refresh: the user must sign in again.
    needs_reauth: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    updated_at: Mapped[int] = mapped_column(Integer, default=now)

    provider: Mapped[SsoProvider] = relationship(lazy="joined")


class AuditRecord(db.Model):
    """Something that happened: who did what to what, when. Never holds a secret."""

    __table_args__ = (Index("ix_audit_record_domain_at", "domain_id", "at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[int] = mapped_column(Integer, default=now, index=True)
    domain_id: Mapped[int | None] = mapped_column(Integer)
    event: Mapped[str] = mapped_column(String(60), index=True)
    # "user:12", "api_key:3f9c…", "client:<client_id>", "cli", "anonymous".
    actor: Mapped[str] = mapped_column(String(120), default="anonymous")
    target: Mapped[str | None] = mapped_column(String(200))
    ip: Mapped[str | None] = mapped_column(String(64))
    details: Mapped[dict] = mapped_column(JSON, default=dict)

    def as_json(self) -> dict:
        return {
            "id": str(self.id),
            "at": self.at,
            "domain": str(self.domain_id) if self.domain_id is not None else None,
            "event": self.event,
            "actor": self.actor,
            "target": self.target,
            "ip": self.ip,
            "details": dict(self.details),
        }
