"""A domain's webhook endpoints: where to POST which events, and the secrets that sign them."""

from __future__ import annotations

import base64
import secrets
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core import clock, security
from authsvc.core.database import Model

# Standard Webhooks: a secret is "whsec_" and the base64 of 24 to 64 random bytes.
SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


class WebhookEndpoint(Model):
    """A URL of a domain subscribed to ``events`` (space-separated types, authsvc.webhooks.events).

    The secret signs (HMAC needs it, not a digest of it): stored encrypted, shown once. After a
    rotation the previous one signs too, until ``previous_secret_until`` (seconds), so that a
    receiver can switch over without missing a delivery.
    """

    __tablename__ = "webhook_endpoint"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[str] = mapped_column(Text)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    secret_encrypted: Mapped[str] = mapped_column(Text)
    previous_secret_encrypted: Mapped[str | None] = mapped_column(Text)
    previous_secret_until: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[int] = mapped_column(Integer, default=clock.now)

    @classmethod
    def create(cls, domain_id: int, url: str, events: list[str]) -> tuple[WebhookEndpoint, str]:
        """A new endpoint (not yet added to the session) and its secret, to show once."""
        secret = new_secret()
        endpoint = cls(
            id=secrets.token_hex(8),
            domain_id=domain_id,
            url=url,
            events=" ".join(events),
            enabled=True,
            secret_encrypted=security.encrypt(secret),
            created_at=clock.now(),
        )
        return endpoint, secret

    def rotate(self, overlap: int) -> str:
        """A new secret; the current one keeps signing, beside it, for ``overlap`` seconds."""
        secret = new_secret()
        self.previous_secret_encrypted = self.secret_encrypted
        self.previous_secret_until = clock.now() + overlap
        self.secret_encrypted = security.encrypt(secret)
        return secret

    def signing_secrets(self) -> list[str]:
        """The secrets a delivery is signed with now: the current one, and the previous one while it lasts."""
        found = [security.decrypt(self.secret_encrypted)]
        if self.previous_secret_encrypted and (self.previous_secret_until or 0) > clock.now():
            found.append(security.decrypt(self.previous_secret_encrypted))
        return found

    def event_types(self) -> list[str]:
        return self.events.split()

    def as_json(self) -> dict[str, Any]:
        """What the admin API answers: never a secret."""
        rotating = self.previous_secret_encrypted is not None and (self.previous_secret_until or 0) > clock.now()
        return {
            "id": self.id,
            "domain": str(self.domain_id),
            "url": self.url,
            "events": self.event_types(),
            "enabled": self.enabled,
            "created_at": self.created_at,
            "previous_secret_until": self.previous_secret_until if rotating else None,
        }
