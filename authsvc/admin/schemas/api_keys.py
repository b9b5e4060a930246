"""API keys: issuing one for a user of the domain, and changing one."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from authsvc.admin.schemas.answers import EPOCH, Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import DOMAIN_SCOPES, TRIMMED, DomainId, Name, Omissible, Text, Whole
from authsvc.core import validation
from authsvc.core.models import ApiKeyPermission

Permission = Annotated[ApiKeyPermission, TRIMMED]
ExpiresAt = Annotated[
    int,
    Whole(
        0,
        validation.MAX_INTEGER,
        f"must be at most {validation.MAX_INTEGER} (seconds since the epoch), and not negative",
    ),
    Field(description="Seconds since the epoch (in the future, on create); null: never."),
]
SCOPES_DESCRIPTION = (
    "Space-separated scopes, each known to the domain or reserved (`admin`: the admin API; "
    "`resource_token`: delegated provider tokens; `scim`: SCIM provisioning, a domain admin's key only); "
    "default `public`."
)
PERMISSION_DESCRIPTION = (
    "Default `user`. Caps what the key may do on its user's behalf: an admin's `user` key is no admin credential."
)


class ApiKeyChange(Schema):
    """Only the fields given change."""

    name: Omissible[Name] = None
    scopes: Omissible[
        Annotated[str, Text(2000, min_length=1), DOMAIN_SCOPES, Field(description=SCOPES_DESCRIPTION)]
    ] = None
    permission: Omissible[Permission] = Field(default=None, description=PERMISSION_DESCRIPTION)
    expires_at: ExpiresAt | None = None


class ApiKeyCreate(ApiKeyChange):
    """A new API key of a user; its value is in the answer, once."""

    domain: Omissible[DomainId] = None
    user: Annotated[str, Text(320, min_length=1), Field(description="The user's e-mail or id.")]
    name: Name


# Answers


class ApiKey(Answer):
    id: str = Field(description="The part of the key before the dot.")
    name: str
    user: str = Field(description="The user's id.")
    domain: str = Field(description="The domain's id.")
    scopes: str
    created_at: int = Field(description=EPOCH)
    expires_at: int | None = Field(description="Seconds since the epoch; null: never.")
    permission: Permission = Field(
        description="Caps what the key may do on its user's behalf: an admin's `user` key is no admin credential."
    )
    last_used_at: int | None = Field(description="Seconds since the epoch, to the minute; null: never used.")
    revoked: bool


class CreatedApiKey(ApiKey):
    key: str = Field(description="The API key, `<id>.<secret>`, shown this once.")


class ApiKeyList(Page):
    items: list[ApiKey]
