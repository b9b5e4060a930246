"""A domain's branding (docs/branding.md): what the admin API's PUT reads and what it answers."""

from __future__ import annotations

from pydantic import Field

from authsvc.admin.schemas.answers import Answer
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import Text
from authsvc.core import branding, validation

NULL_RESETS = "null returns it to the default."
Color = Text(7, rule=branding.color, description=f"A colour as `#RRGGBB`; {NULL_RESETS}")
Link = Text(2000, rule=branding.link, description=f"An https URL (plain http only for loopback); {NULL_RESETS}")


class BrandingChange(Schema):
    """Only the fields given change; a field given as null returns to the default. The logo is uploaded apart
    (`PUT /domains/{id}/branding/logo`, the image as the body)."""

    display_name: Text(200, min_length=1, description=f"Shown in the header; {NULL_RESETS}") | None = None
    primary_color: Color | None = Field(
        default=None,
        description="The main button's background (the sign-in button included); a colour on which white text "
        "would fail WCAG 2.1 AA gets black text. " + NULL_RESETS,
    )
    background_color: Color | None = Field(default=None, description=f"The page's background; {NULL_RESETS}")
    support_url: Link | None = None
    support_email: (
        Text(320, rule=validation.email, description=f"Shown as the support link without a support_url; {NULL_RESETS}")
        | None
    ) = None
    privacy_url: Link | None = None
    terms_url: Link | None = None
    default_locale: (
        Text(35, rule=branding.locale, description=f"A language tag such as `en` or `de-CH`; {NULL_RESETS}") | None
    ) = None


class BrandingLogo(Answer):
    content_type: str = Field(description="image/png, image/jpeg or image/webp: the re-encoded upload's.")
    digest: str = Field(description="SHA-256 of the stored image (hex): its ETag and its URL's `v`.")


class Branding(Answer):
    domain: str = Field(description="The domain's id.")
    display_name: str | None
    logo: BrandingLogo | None = Field(description="Served at /auth/branding/logo?v=DIGEST on the domain's host.")
    primary_color: str | None
    primary_text_color: str | None = Field(description="The main button's text colour, computed (WCAG 2.1 AA).")
    background_color: str | None
    support_url: str | None
    support_email: str | None
    privacy_url: str | None
    terms_url: str | None
    default_locale: str | None
    updated_at: int | None = Field(description="When it last changed (seconds); null for the default look.")
