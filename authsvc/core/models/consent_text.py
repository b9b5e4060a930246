"""What the consent page says about an application and its scopes (docs/branding.md, "Consent").

``ScopeDescription``: a domain admin's words for one of the domain's scopes, for one locale or (locale
``""``) for any; the built-in descriptions of the standard scopes are authsvc.core.scope_text's.
``ApplicationLogo``: an application's logo, set by an admin through the domain logo's pipeline
(authsvc.core.logo: checked by content, re-encoded, served from our own host), and the ``logo_uri``
a client declared about itself at dynamic registration (RFC 7591 2), which is never fetched: the
consent page names it as not verified. A row of its own, so that an authorisation request, which
loads the application on every call, reads neither.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, deferred, mapped_column

from authsvc.core.database import Model, now

# The longest description an admin may set: a sentence or two, as a consent page lists several.
DESCRIPTION_MAX = 300


class ScopeDescription(Model):
    __table_args__ = (UniqueConstraint("domain_id", "scope", "locale"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    scope: Mapped[str] = mapped_column(String(200))
    # A language tag (en, de-CH), or "" for every locale without a description of its own.
    locale: Mapped[str] = mapped_column(String(35), default="")
    text: Mapped[str] = mapped_column(String(DESCRIPTION_MAX))
    updated_at: Mapped[int] = mapped_column(Integer, default=now, onupdate=now)


class ApplicationLogo(Model):
    application_id: Mapped[int] = mapped_column(ForeignKey("application.id"), primary_key=True)
    # The admin's upload, re-encoded (authsvc.core.logo); read only when the image itself is asked for.
    logo: Mapped[bytes | None] = deferred(mapped_column(LargeBinary))
    logo_type: Mapped[str | None] = mapped_column(String(20))
    # SHA-256 of ``logo`` (hex): its ETag and the version in its URL.
    logo_digest: Mapped[str | None] = mapped_column(String(64))
    # RFC 7591 ``logo_uri`` as the client registered it: shown as a not verified claim, never fetched.
    declared_uri: Mapped[str | None] = mapped_column(String(2000))
    updated_at: Mapped[int] = mapped_column(Integer, default=now, onupdate=now)
