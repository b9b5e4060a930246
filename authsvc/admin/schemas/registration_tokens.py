"""Initial access tokens for dynamic client registration (RFC 7591 3)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from authsvc.admin.schemas.answers import Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.choices import DEFAULT_EXPIRES_IN, MAX_EXPIRES_IN, MAX_USES
from authsvc.admin.schemas.types import DomainId, Omissible, Text, Whole


class RegistrationTokenCreate(Schema):
    """A new initial access token; its value is in the answer, once."""

    domain: Omissible[DomainId] = None
    name: Omissible[Annotated[str, Text(200)]] = None
    expires_in: Annotated[
        int,
        Whole(60, MAX_EXPIRES_IN, f"must be from 60 to {MAX_EXPIRES_IN} seconds"),
        Field(description="Seconds; default 86400."),
    ] = DEFAULT_EXPIRES_IN
    max_uses: Annotated[int, Whole(1, MAX_USES, f"must be from 1 to {MAX_USES}"), Field(description="Default 1.")] = 1


# Answers


class RegistrationToken(Answer):
    id: str = Field(description="Hexadecimal.")
    domain: str
    name: str
    max_uses: int = Field(description="Registrations it allows.")
    uses: int = Field(description="Registrations made with it.")
    created_by: str = Field(description="Who issued it: `user:ID`, `api_key:ID` or `cli`.")
    created_at: int
    expires_at: int
    revoked_at: int | None
    state: Literal["active", "used_up", "expired", "revoked"]


class CreatedRegistrationToken(RegistrationToken):
    token: str = Field(description="The initial access token, shown this once; only its digest is kept.")


class RegistrationTokenList(Page):
    items: list[RegistrationToken]
