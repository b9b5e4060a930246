"""Second factors of local sign-in: authenticator apps (TOTP), passkeys / security keys (WebAuthn)
and one-time recovery codes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core.database import IDS_NEVER_REUSED, Model, now


class MfaFactor(Model):
    """An authenticator app (``totp``) or a passkey / security key (``webauthn``) of a user.

    An app is ``confirmed`` once the user typed a first valid code; a passkey once
    its registration was verified.
    """

    __table_args__ = IDS_NEVER_REUSED

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16), default="totp")
    name: Mapped[str] = mapped_column(String(100), default="Authenticator app")
    # The TOTP secret, encrypted with the service's key (security.encrypt), never stored in clear.
    secret: Mapped[str | None] = mapped_column(Text)
    # The last time step a code was accepted for: a code is good once (RFC 6238 5.2).
    last_step: Mapped[int] = mapped_column(BigInteger, default=0)
    # WebAuthn: the credential's id (base64url), its COSE public key (base64url) and the
    # authenticator's signature counter, which must grow (a cloned key shows an old one).
    credential_id: Mapped[str | None] = mapped_column(String(1400), unique=True)
    public_key: Mapped[str | None] = mapped_column(Text)
    sign_count: Mapped[int] = mapped_column(BigInteger, default=0)
    confirmed: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    def as_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "kind": self.kind, "name": self.name, "created_at": self.created_at}


class RecoveryCode(Model):
    """One of the ten one-time codes a user gets at enrolment; only its digest is kept."""

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"), index=True)
    digest: Mapped[str] = mapped_column(String(64))
    used_at: Mapped[int | None] = mapped_column(Integer)
