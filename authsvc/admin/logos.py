"""An uploaded logo, as the admin verbs store it: a domain's (authsvc.admin.branding) and an application's
(authsvc.admin.consent_texts). The image is checked by its content and re-encoded by authsvc.core.logo; an
unacceptable one is refused with the reason under ``logo``."""

from __future__ import annotations

from authsvc.core import logo
from authsvc.core.errors import ValidationFailed
from authsvc.core.models import ApplicationLogo, DomainBranding
from authsvc.core.validation import Invalid


def reencoded(upload: bytes) -> logo.Logo:
    """``upload`` as a stored logo; ValidationFailed with the reason when it is not an acceptable image."""
    try:
        return logo.reencode(upload)
    except Invalid as exc:
        raise ValidationFailed({"logo": str(exc)}) from None


def put(row: DomainBranding | ApplicationLogo, image: logo.Logo | None) -> None:
    """Set ``row``'s logo columns to ``image``; None removes the logo."""
    row.logo = image.data if image else None
    row.logo_type = image.content_type if image else None
    row.logo_digest = image.digest if image else None
