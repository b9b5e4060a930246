"""People and service accounts, and the approvals they gave applications."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    or_,
)
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import Mapped, mapped_column, relationship
from sqlalchemy.sql import ColumnElement

from authsvc.core import clock, security
from authsvc.core.database import IDS_NEVER_REUSED, Model, now
from authsvc.core.models.tenancy import Application
from authsvc.core.permissions import Permission


class User(Model):
    # The unique constraint is also the index SCIM's ``userName eq`` filter uses.
    __table_args__ = (
        UniqueConstraint("domain_id", "email"),
        Index("ix_user_domain_external_id", "domain_id", "external_id"),
        IDS_NEVER_REUSED,
    )
    if TYPE_CHECKING:
        # Whether the user has a directory entry: a column authsvc.core.models attaches once LdapAccount exists.
        directory_linked: Mapped[bool]

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"))
    # Stored lower-cased, which makes the unique constraint case-insensitive.
    email: Mapped[str] = mapped_column(String(320))
    # Whether someone vouched for the address (an admin, or the provider that
    # created the user): the email_verified claim says exactly this.
    email_verified: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Signed up at /auth/signup and not yet confirmed the address: no sign-in until the link is followed.
    signup_pending: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
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
    # a password change or when the user is disabled. It starts at the row's
    # creation: were an id ever to come back (ids are never reused, IDS_NEVER_REUSED,
    # but a database may be restored), what a deleted user was granted is not the new one's.
    sessions_valid_after: Mapped[int] = mapped_column(BigInteger, default=clock.now_ms)
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    # SCIM provisioning (RFC 7643): "scim" once a provisioning client created or adopted the user;
    # the client's id for the user; the SCIM attributes we keep as given (name, emails, ...);
    # when SCIM last wrote the user (ms, meta.lastModified); when SCIM deleted it (hidden since).
    provisioned_by: Mapped[str | None] = mapped_column(String(20))
    external_id: Mapped[str | None] = mapped_column(String(255))
    scim_profile: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    scim_modified_at: Mapped[int | None] = mapped_column(BigInteger)
    scim_deleted_at: Mapped[int | None] = mapped_column(Integer)
    # The user handle of the user's passkeys (WebAuthn's user.id; base64url of 32 random bytes): what a
    # discoverable passkey gives back at sign-in. Random, never the e-mail or the row's id; set by the
    # first passkey registration (authsvc.auth.mfa.passkeys) and kept, so an authenticator holds one
    # entry for the account.
    passkey_handle: Mapped[str | None] = mapped_column(String(64), index=True, unique=True)
    # The language the user chose with the pages' switcher (a shipped catalog's name, such as de or pt_BR);
    # None: the request decides (docs/translations.md). Pages, e-mails and the ``locale`` claim follow it.
    locale: Mapped[str | None] = mapped_column(String(35))

    def set_password(self, password: str) -> None:
        self.password_hash = security.hash_password(password)

    def check_password(self, password: str) -> bool:
        return security.check_password(password, self.password_hash)

    def get_user_id(self) -> int:
        return self.id

    @property
    def permissions(self) -> Permission:
        """PlaceOS permission bits: support, admin."""
        return Permission.of(support=self.support, admin=self.admin)

    @hybrid_property
    def privileged(self) -> bool:
        """Whether the user holds a privilege an SSO provider's or a directory's assertion alone may never reach.

        The one rule, in Python (``user.privileged``) and in SQL (``User.privileged``, for the queries
        that look for privileged accounts or leave them out).
        """
        return bool(self.system_admin or self.admin or self.support or self.service_account)

    @privileged.inplace.expression
    @classmethod
    def _privileged_expression(cls) -> ColumnElement[bool]:
        return or_(cls.system_admin, cls.admin, cls.support, cls.service_account)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "email": self.email,
            "email_verified": self.email_verified,
            "name": self.name,
            "domain": str(self.domain_id),
            "service_account": self.service_account,
            "admin": self.admin,
            "support": self.support,
            "groups": list(self.groups),
            "disabled": self.disabled,
            "system_admin": self.system_admin,
            "provisioned_by": self.provisioned_by,
        }


class Consent(Model):
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
