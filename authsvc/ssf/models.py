"""A domain's SSF streams (one per receiving application), the subjects left out of them, and the SETs that
wait for a receiver: those of a poll stream until acknowledged (RFC 8936), those of a paused push stream until
it is enabled again."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core import clock, security
from authsvc.core.database import Model

# SSF 1.0 7.1.1: the delivery methods, by their URNs.
PUSH = "urn:ietf:rfc:8935"
POLL = "urn:ietf:rfc:8936"
METHODS = (PUSH, POLL)

ENABLED, PAUSED, DISABLED = "enabled", "paused", "disabled"
STATUSES = (ENABLED, PAUSED, DISABLED)


class SsfStream(Model):
    """The stream of one receiving application: where its SETs go (``method``, ``endpoint_url`` for push) and
    which events it asked for (``events_requested``, space-separated URIs).

    ``issuer``: the issuer the receiver created the stream at (the SETs' ``iss``). A push stream's
    ``authorization_header`` is sent with every SET, so it is stored encrypted, as a webhook's secret is.
    """

    __tablename__ = "ssf_stream"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id", ondelete="CASCADE"), index=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("application.id", ondelete="CASCADE"), unique=True)
    issuer: Mapped[str] = mapped_column(String(2000))
    audience: Mapped[str] = mapped_column(String(2000))
    method: Mapped[str] = mapped_column(String(40))
    endpoint_url: Mapped[str | None] = mapped_column(String(2000))
    authorization_encrypted: Mapped[str | None] = mapped_column(Text)
    events_requested: Mapped[str] = mapped_column(Text, default="")
    description: Mapped[str | None] = mapped_column(String(500))
    status: Mapped[str] = mapped_column(String(16), default=ENABLED)
    reason: Mapped[str | None] = mapped_column(String(500))
    verified_at: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[int] = mapped_column(Integer, default=clock.now)

    @classmethod
    def create(cls, domain_id: int, application_id: int, issuer: str, audience: str) -> SsfStream:
        return cls(
            id=secrets.token_hex(16),
            domain_id=domain_id,
            application_id=application_id,
            issuer=issuer,
            audience=audience,
            method=PUSH,
            events_requested="",
            status=ENABLED,
            created_at=clock.now(),
        )

    @property
    def requested(self) -> list[str]:
        return self.events_requested.split()

    @property
    def authorization_header(self) -> str | None:
        return security.decrypt(self.authorization_encrypted) if self.authorization_encrypted else None

    @authorization_header.setter
    def authorization_header(self, value: str | None) -> None:
        self.authorization_encrypted = security.encrypt(value) if value else None

    def delivery(self, poll_url: str) -> dict[str, Any]:
        """SSF 1.0 8.1.1's ``delivery``: never the authorization header (the receiver has it)."""
        if self.method == POLL:
            return {"method": POLL, "endpoint_url": poll_url}
        return {"method": PUSH, "endpoint_url": self.endpoint_url}


class SsfSubject(Model):
    """A user added to (``included``) or removed from a stream (SSF 1.0 8.1.3); users without a row are in it."""

    __tablename__ = "ssf_subject"
    __table_args__ = (UniqueConstraint("stream_id", "user_id", name="uq_ssf_subject_stream_user"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    stream_id: Mapped[str] = mapped_column(ForeignKey("ssf_stream.id", ondelete="CASCADE"))
    application_id: Mapped[int] = mapped_column(ForeignKey("application.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    included: Mapped[bool] = mapped_column(Boolean, default=True)


class SsfWaiting(Model):
    """A SET's claims waiting for its receiver (encrypted: they name a person), oldest first by ``id``."""

    __tablename__ = "ssf_waiting"
    __table_args__ = (
        UniqueConstraint("stream_id", "jti", name="uq_ssf_waiting_stream_jti"),
        Index("ix_ssf_waiting_stream", "stream_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    stream_id: Mapped[str] = mapped_column(ForeignKey("ssf_stream.id", ondelete="CASCADE"))
    application_id: Mapped[int] = mapped_column(ForeignKey("application.id", ondelete="CASCADE"), index=True)
    jti: Mapped[str] = mapped_column(String(64))
    claims_encrypted: Mapped[str] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(BigInteger)
