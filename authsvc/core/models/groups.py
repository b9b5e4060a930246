"""Groups provisioned over SCIM (RFC 7643 4.2) and their members, users of the same domain."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core.database import IDS_NEVER_REUSED, Model, now


class ScimGroup(Model):
    __table_args__ = (UniqueConstraint("domain_id", "display_name"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    # A member's groups are their roles (``u.r``) by this name, as SAML and LDAP groups are.
    display_name: Mapped[str] = mapped_column(String(255))
    external_id: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    modified_at: Mapped[int] = mapped_column(BigInteger)


class ScimGroupMember(Model):
    group_id: Mapped[int] = mapped_column(ForeignKey("scim_group.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), primary_key=True, index=True)
    # The member's "display" as the client gave it (else the user's e-mail is shown).
    display: Mapped[str | None] = mapped_column(String(255))
