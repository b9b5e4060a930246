"""The audit trail."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core.database import IDS_NEVER_REUSED, Model, now


class AuditRecord(Model):
    """Something that happened: who did what to what, when. Never holds a secret."""

    __table_args__ = (Index("ix_audit_record_domain_at", "domain_id", "at"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[int] = mapped_column(Integer, default=now, index=True)
    domain_id: Mapped[int | None] = mapped_column(Integer)
    event: Mapped[str] = mapped_column(String(60), index=True)
    # "user:12", "api_key:3f9c…", "client:<client_id>", "cli", "anonymous".
    actor: Mapped[str] = mapped_column(String(120), default="anonymous")
    target: Mapped[str | None] = mapped_column(String(200))
    ip: Mapped[str | None] = mapped_column(String(64))
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    def as_json(self) -> dict[str, Any]:
        return AuditRecord.json_of(
            self.id,
            at=self.at,
            domain_id=self.domain_id,
            event=self.event,
            actor=self.actor,
            target=self.target,
            ip=self.ip,
            details=self.details,
        )

    @staticmethod
    def json_of(
        ident: int,
        *,
        at: int,
        domain_id: int | None,
        event: str,
        actor: str,
        target: str | None,
        ip: str | None,
        details: dict[str, Any],
    ) -> dict[str, Any]:
        """A record as the admin API and the events channel show it (also for rows inserted without the ORM)."""
        return {
            "id": str(ident),
            "at": at,
            "domain": str(domain_id) if domain_id is not None else None,
            "event": event,
            "actor": actor,
            "target": target,
            "ip": ip,
            "details": dict(details),
        }
