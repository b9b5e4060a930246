"""Dynamic client registration (RFC 7591): the initial access tokens a domain admin issues."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, select, update
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core import security
from authsvc.core.database import Model, db, now, rows_affected


class RegistrationToken(Model):
    """An initial access token: lets its holder register ``max_uses`` applications in the domain until it expires.

    Only a digest of the token is kept; it is shown once, when issued.
    """

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    max_uses: Mapped[int] = mapped_column(Integer, default=1)
    uses: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[str] = mapped_column(String(120))
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    expires_at: Mapped[int] = mapped_column(Integer)
    revoked_at: Mapped[int | None] = mapped_column(Integer)

    @classmethod
    def issue(
        cls, domain_id: int, *, expires_in: int, max_uses: int, created_by: str, name: str = ""
    ) -> tuple[RegistrationToken, str]:
        """A new token of the domain and the value shown once."""
        value = security.new_secret()
        token = cls(
            id=secrets.token_hex(8),
            domain_id=domain_id,
            name=name,
            token_digest=security.digest(value),
            max_uses=max_uses,
            uses=0,
            created_by=created_by,
            created_at=now(),
            expires_at=now() + expires_in,
        )
        return token, value

    @staticmethod
    def find(domain_id: int, value: str) -> RegistrationToken | None:
        """The domain's token ``value``, usable or not (through the unique index on its digest)."""
        return db.session.scalar(
            select(RegistrationToken).where(
                RegistrationToken.token_digest == security.digest(value), RegistrationToken.domain_id == domain_id
            )
        )

    def usable(self, at: int | None = None) -> bool:
        return self.revoked_at is None and (at or now()) < self.expires_at and self.uses < self.max_uses

    def spend(self) -> bool:
        """Count one registration against the token, if it still has one to give (atomic across workers).

        The caller commits, with the registration: a refused registration spends nothing.
        """
        spent = rows_affected(
            db.session.execute(
                update(RegistrationToken)
                .where(
                    RegistrationToken.id == self.id,
                    RegistrationToken.revoked_at.is_(None),
                    RegistrationToken.expires_at > now(),
                    RegistrationToken.uses < RegistrationToken.max_uses,
                )
                .values(uses=RegistrationToken.uses + 1)
                .execution_options(synchronize_session=False)
            )
        )
        return spent == 1

    def state(self, at: int | None = None) -> str:
        at = at or now()
        if self.revoked_at is not None:
            return "revoked"
        if at >= self.expires_at:
            return "expired"
        return "used_up" if self.uses >= self.max_uses else "active"

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "domain": str(self.domain_id),
            "name": self.name,
            "max_uses": self.max_uses,
            "uses": self.uses,
            "created_by": self.created_by,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
            "state": self.state(),
        }
