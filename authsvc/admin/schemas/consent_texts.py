"""What the consent page says (docs/branding.md, "Consent"): a scope's description, an application's logo."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

from authsvc.admin.schemas.answers import Answer
from authsvc.admin.schemas.base import Schema
from authsvc.core import scope_text
from authsvc.core.models.consent_text import DESCRIPTION_MAX

# No length constraint of its own: checked_text says how long the text is and the limit.
Description = Annotated[str, AfterValidator(scope_text.checked_text)]
Locale = Annotated[str, StringConstraints(max_length=35), AfterValidator(scope_text.checked_locale)]
ScopeName = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class ScopeDescriptionChange(Schema):
    """Set (or, with `text` null, remove) the description of one scope for one locale or for any."""

    scope: ScopeName = Field(description="One of the domain's scopes, a reserved one, or a standard one (openid...).")
    locale: Locale | None = Field(
        default=None, description="A language tag such as `en` or `de-CH`; omitted: for every locale without its own."
    )
    text: Description | None = Field(
        description=f"One line of plain text, at most {DESCRIPTION_MAX} characters; null removes the description."
    )


class ScopeDescriptionItem(Answer):
    scope: str
    locale: str | None = Field(description="null: for every locale without a description of its own.")
    text: str
    updated_at: int


class ScopeDescriptionList(Answer):
    domain: str = Field(description="The domain's id.")
    descriptions: list[ScopeDescriptionItem] = Field(description="The admins' descriptions, by scope then locale.")
    built_in: dict[str, str] = Field(
        description="The service's own descriptions (English; translated on the page), shown where no admin's is."
    )


class ApplicationLogoImage(Answer):
    content_type: str = Field(description="image/png, image/jpeg or image/webp: the re-encoded upload's.")
    digest: str = Field(description="SHA-256 of the stored image (hex): its ETag and its URL's `v`.")


class ApplicationLogo(Answer):
    application: str = Field(description="The application's id.")
    logo: ApplicationLogoImage | None = Field(
        description="Set by an admin; served at /auth/branding/applications/{client_id}/logo?v=DIGEST."
    )
    declared_logo_uri: str | None = Field(
        description="The `logo_uri` the client registered (RFC 7591): never fetched; the consent page names its "
        "host as not verified when no admin's logo is set."
    )
