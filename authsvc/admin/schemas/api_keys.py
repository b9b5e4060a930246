"""API keys: issuing one for a user of the domain, and changing one."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import DomainId, DomainScopes, Name, Text, Whole
from authsvc.core import validation

Permission = Literal["user", "support", "admin"]  # models.API_KEY_PERMISSIONS
ExpiresAt = Whole(
    0,
    validation.MAX_INTEGER,
    f"must be at most {validation.MAX_INTEGER} (seconds since the epoch), and not negative",
    description="Seconds since the epoch (in the future, on create); null: never.",
)
SCOPES_DESCRIPTION = (
    "Space-separated scopes, each known to the domain or reserved (`admin`: the admin API; "
    "`resource_token`: delegated provider tokens); default `public`."
)
PERMISSION_DESCRIPTION = (
    "Default `user`. Caps what the key may do on its user's behalf: an admin's `user` key is no admin credential."
)


class ApiKeyChange(Schema):
    """Only the fields given change."""

    name: Name() = None
    scopes: DomainScopes(min_length=1, description=SCOPES_DESCRIPTION) = None
    permission: Permission = Field(default=None, description=PERMISSION_DESCRIPTION)
    expires_at: ExpiresAt | None = None


class ApiKeyCreate(ApiKeyChange):
    """A new API key of a user; its value is in the answer, once."""

    domain: DomainId = None
    user: Text(320, min_length=1, description="The user's e-mail or id.")
    name: Name()
