"""A domain's branding (docs/branding.md): what the admin API's PUT reads and what it answers.

The field types are written out as ``Annotated`` aliases (not built by
calling ``types.Text``), so that the type checker reads them; the rules are
authsvc.core.branding's, which the command line and the console share.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

from authsvc.admin.schemas.answers import Answer
from authsvc.admin.schemas.base import Schema
from authsvc.core import branding, validation

NULL_RESETS = "null returns it to the default."


def _without_nul(value: str) -> str:
    if "\x00" in value:
        raise validation.Invalid("must not contain NUL")
    return value


DisplayName = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(_without_nul)]
Color = Annotated[str, StringConstraints(max_length=7), AfterValidator(branding.color)]
Link = Annotated[str, StringConstraints(max_length=2000), AfterValidator(branding.link)]
Email = Annotated[str, StringConstraints(max_length=320), AfterValidator(validation.email)]
Locale = Annotated[str, StringConstraints(max_length=35), AfterValidator(branding.locale)]
LINK = f"An https URL (plain http only for a loopback host); {NULL_RESETS}"


class BrandingChange(Schema):
    """Only the fields given change; a field given as null returns to the default. The logo is uploaded apart
    (`PUT /domains/{id}/branding/logo`, the image as the body)."""

    display_name: DisplayName | None = Field(default=None, description=f"Shown in the header; {NULL_RESETS}")
    primary_color: Color | None = Field(
        default=None,
        description="`#RRGGBB`: the main button's background (the sign-in button included); a colour on which "
        f"white text would fail WCAG 2.1 AA gets black text. {NULL_RESETS}",
    )
    background_color: Color | None = Field(default=None, description=f"`#RRGGBB`: the page's. {NULL_RESETS}")
    support_url: Link | None = Field(default=None, description=LINK)
    support_email: Email | None = Field(
        default=None, description=f"The footer's support link when there is no support_url; {NULL_RESETS}"
    )
    privacy_url: Link | None = Field(default=None, description=LINK)
    terms_url: Link | None = Field(default=None, description=LINK)
    default_locale: Locale | None = Field(
        default=None, description=f"A language tag such as `en` or `de-CH`; {NULL_RESETS}"
    )


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
