"""The signing keys of a domain (ID tokens, logout tokens)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, bindparam, select
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core.database import Model, db, now


class SigningKey(Model):
    """One key pair of a domain. The private key is kept encrypted (security.encrypt).

    A key is current until it is rotated (``retired_at`` set); it stays in the
    JWKS until ``retire_after``, when every token it signed has expired.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    kid: Mapped[str] = mapped_column(String(100), unique=True)
    alg: Mapped[str] = mapped_column(String(10))
    private_key_encrypted: Mapped[str] = mapped_column(Text)
    # The public JWK (kty, n/e or crv/x/y, kid, alg, use): served without decrypting anything.
    public_jwk: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(Integer, default=now)
    retired_at: Mapped[int | None] = mapped_column(Integer)
    retire_after: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (
        # At most one current key per domain and algorithm, even when two
        # workers generate the first one at once.
        Index(
            "ix_signing_key_current",
            "domain_id",
            "alg",
            unique=True,
            postgresql_where=retired_at.is_(None),
            sqlite_where=retired_at.is_(None),
        ),
    )

    def state(self, at: int) -> str:
        if self.retired_at is None:
            return "current"
        return "previous" if self.retire_after is not None and at < self.retire_after else "expired"

    @staticmethod
    def current(domain_id: int, alg: str) -> SigningKey | None:
        return db.session.scalar(_CURRENT, {"domain_id": domain_id, "alg": alg})

    @staticmethod
    def of_domain(domain_id: int) -> list[SigningKey]:
        """The domain's keys, newest first."""
        return list(
            db.session.scalars(
                select(SigningKey)
                .where(SigningKey.domain_id == domain_id)
                .order_by(SigningKey.created_at.desc(), SigningKey.id.desc())
            )
        )


# Built once: every ID token reads the current key, and a statement made per call costs its cache key each time.
# The domain's current key of an algorithm: the one not retired.
_IS_CURRENT = (
    SigningKey.domain_id == bindparam("domain_id"),
    SigningKey.alg == bindparam("alg"),
    SigningKey.retired_at.is_(None),
)
_CURRENT = select(SigningKey).where(*_IS_CURRENT)
# The ``kid`` of the domain's current key of ``alg``: one column, where the parsed key is kept by kid
# (authsvc.oauth.keys.request_key reads it on the readers).
CURRENT_KID = select(SigningKey.kid).where(*_IS_CURRENT)
