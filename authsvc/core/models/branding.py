"""A domain's branding: the look of its pages and e-mails (docs/branding.md).

One row per branded domain; a domain without one has the default look. The
logo is stored here, re-encoded (authsvc.core.logo), and served from our own
host. ``Domain.branding_version`` changes with every change of the row: a
worker's cached brand (authsvc.core.branding) is keyed by it, so pages read
no more than the domain row they already load.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, deferred, mapped_column

from authsvc.core.database import Model, now


class DomainBranding(Model):
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), primary_key=True)
    display_name: Mapped[str | None] = mapped_column(String(200))
    primary_color: Mapped[str | None] = mapped_column(String(7))
    background_color: Mapped[str | None] = mapped_column(String(7))
    support_url: Mapped[str | None] = mapped_column(String(2000))
    support_email: Mapped[str | None] = mapped_column(String(320))
    privacy_url: Mapped[str | None] = mapped_column(String(2000))
    terms_url: Mapped[str | None] = mapped_column(String(2000))
    default_locale: Mapped[str | None] = mapped_column(String(35))
    # The re-encoded image: read only when the logo itself is asked for.
    logo: Mapped[bytes | None] = deferred(mapped_column(LargeBinary))
    logo_type: Mapped[str | None] = mapped_column(String(20))
    # SHA-256 of ``logo`` (hex): its ETag and the version in its URL.
    logo_digest: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[int] = mapped_column(Integer, default=now, onupdate=now)
