"""Credentials: issued access and refresh tokens, and API keys (their reads and writes: authsvc.tokens)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from authsvc.core.database import IDS_NEVER_REUSED, Model, now
from authsvc.core.models.accounts import User
from authsvc.core.models.tenancy import Application
from authsvc.core.permissions import Permission

# A JSON column whose None is SQL NULL, not the JSON text ``null``: a grant that sets no value (most set no
# ``act``, client credentials no ``amr``) binds it without serialising it, and a read of it parses nothing (the
# two read back alike, as None). Not DDL: the column's type in the database is the same.
_JSON_OR_NULL = JSON(none_as_null=True)
_HAS_REFRESH, _HAS_USER = text("refresh_token_digest IS NOT NULL"), text("user_id IS NOT NULL")


class Token(Model):
    """An issued access token and its refresh token, held as digests.

    Tokens from one authorisation (a code, or a password grant) share a
    ``family``; rotation adds to it and reuse of a spent refresh token revokes
    all of it.
    """

    __table_args__ = (
        Index("ix_token_family", "family"),
        # Unique, and on PostgreSQL covering what tokens.presented.TOKEN_CLAIMS reads of the
        # token: the inspect lookup is an index-only scan however large the table grows.
        Index(
            "ix_token_access_token_digest",
            "access_token_digest",
            unique=True,
            postgresql_include=[
                "application_id",
                "user_id",
                "scope",
                "issued_at",
                "expires_in",
                "revoked_at",
                "dpop_jkt",
                "audience",
                "act",
            ],
        ),
        # Partial: a token without a refresh token (client credentials, token exchange) or without a user (a
        # client with no service account) adds no entry that no reader finds: each asks for a value, which
        # implies IS NOT NULL (migration c4a9e2f7b1d3).
        Index(
            "ix_token_refresh_token_digest",
            "refresh_token_digest",
            unique=True,
            postgresql_where=_HAS_REFRESH,
            sqlite_where=_HAS_REFRESH,
        ),
        Index("ix_token_user_id", "user_id", postgresql_where=_HAS_USER, sqlite_where=_HAS_USER),
        IDS_NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("application.id"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))
    access_token_digest: Mapped[str] = mapped_column(String(64))
    refresh_token_digest: Mapped[str | None] = mapped_column(String(64))
    family: Mapped[str] = mapped_column(String(64))
    # 64: urn:ietf:params:oauth:grant-type:device_code is 44 characters.
    grant_type: Mapped[str] = mapped_column(String(64))
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
    # OpenID Connect: the sign-in behind the grant, for the ID tokens of later refreshes.
    auth_time: Mapped[int | None] = mapped_column(Integer)
    amr: Mapped[list[str] | None] = mapped_column(_JSON_OR_NULL)
    sid: Mapped[str | None] = mapped_column(String(64))
    # DPoP (RFC 9449): the RFC 7638 thumbprint of the key the tokens are bound to (cnf.jkt); None for bearer tokens.
    dpop_jkt: Mapped[str | None] = mapped_column(String(43))
    # RFC 8707: the resources the access token is for, space separated; None means the domain (as before).
    audience: Mapped[str | None] = mapped_column(Text)
    # The resources the grant allows (the authorisation's): a refresh may ask for fewer, never for others.
    resources: Mapped[str | None] = mapped_column(Text)
    # RFC 8693 4.1: who acts for the subject (a token exchange's delegation), nested for a chain; None otherwise.
    act: Mapped[dict[str, Any] | None] = mapped_column(_JSON_OR_NULL)

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


ApiKeyPermission = Literal["user", "support", "admin"]
API_KEY_PERMISSIONS: tuple[ApiKeyPermission, ...] = get_args(ApiKeyPermission)


def capped_permissions(level: str, bits: Permission) -> Permission:
    """A user's permission ``bits`` as an API key of ``level`` may use them."""
    if level == "admin":
        return Permission(bits)
    if level == "support":
        return Permission.SUPPORT if bits else Permission(0)
    return Permission(0)


class ApiKey(Model):
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

    def as_json(self) -> dict[str, Any]:
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
