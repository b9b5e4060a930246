"""LDAP / Active Directory directories of a domain, and the users' entries in them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, mapped_column, relationship

from authsvc.core.database import Model, db, now

DEFAULT_USER_FILTER = "(mail={email})"
DEFAULT_GROUP_ATTRIBUTE = "memberOf"


class LdapDirectory(Model):
    """A directory the ordinary sign-in checks for the domain's accounts that have no local password.

    The service binds as ``bind_dn`` to search ``base_dn`` with ``user_filter``
    (``{email}`` replaced by the escaped address), then binds as the entry
    found with the password given. The bind password is kept encrypted
    (security.encrypt), as SSO providers' client secrets are.
    """

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(String(500))  # ldap://host:port or ldaps://host:port
    starttls: Mapped[bool] = mapped_column(Boolean, default=False)
    bind_dn: Mapped[str] = mapped_column(String(500))
    bind_password_encrypted: Mapped[str] = mapped_column(Text)
    base_dn: Mapped[str] = mapped_column(String(500))
    user_filter: Mapped[str] = mapped_column(String(1000), default=DEFAULT_USER_FILTER)
    group_attribute: Mapped[str] = mapped_column(String(100), default=DEFAULT_GROUP_ATTRIBUTE)
    # An attribute whose presence (any value) marks an entry disabled, besides
    # Active Directory's userAccountControl ACCOUNTDISABLE bit, which is always read.
    disabled_attribute: Mapped[str | None] = mapped_column(String(100))
    # PEM of the CA(s) that sign the directory's certificate; else the system's.
    ca_pem: Mapped[str | None] = mapped_column(Text)
    # The directory may be on loopback or private addresses (it usually is, on premises).
    # Only a system admin (or the CLI) sets it, as for SSO providers.
    allow_private_network: Mapped[bool] = mapped_column(Boolean, default=False)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    @staticmethod
    def of_domain(domain_id: int, enabled_only: bool = False) -> list[LdapDirectory]:
        query = select(LdapDirectory).where(LdapDirectory.domain_id == domain_id)
        if enabled_only:
            query = query.where(LdapDirectory.enabled)
        return list(db.session.scalars(query.order_by(LdapDirectory.name, LdapDirectory.id)))

    def as_json(self) -> dict[str, Any]:
        """Everything but the bind password, which is write-only."""
        return {
            "id": self.id,
            "domain": str(self.domain_id),
            "name": self.name,
            "url": self.url,
            "starttls": self.starttls,
            "bind_dn": self.bind_dn,
            "base_dn": self.base_dn,
            "user_filter": self.user_filter,
            "group_attribute": self.group_attribute,
            "disabled_attribute": self.disabled_attribute,
            "ca_pem": self.ca_pem,
            "allow_private_network": self.allow_private_network,
            "enabled": self.enabled,
        }


class LdapAccount(Model):
    """A user's entry in a directory: the external identity an LDAP sign-in links.

    ``subject`` is the entry's stable id (entryUUID, AD's objectGUID; else its
    DN). ``checked_at`` is when the directory last said the entry may sign in:
    a session older than the recheck interval asks again (authsvc.auth.ldap_signin).
    """

    __table_args__ = (UniqueConstraint("directory_id", "subject"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    directory_id: Mapped[str] = mapped_column(ForeignKey("ldap_directory.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"), index=True)
    subject: Mapped[str] = mapped_column(String(500))
    dn: Mapped[str] = mapped_column(String(1000))
    # As ExternalIdentity.via: "new_user" or "email" (automatic), "system_admin" (explicit).
    via: Mapped[str] = mapped_column(String(20), default="new_user")
    checked_at: Mapped[int] = mapped_column(Integer, default=now)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    directory: Mapped[LdapDirectory] = relationship(lazy="joined")
