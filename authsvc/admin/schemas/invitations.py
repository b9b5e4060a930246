"""Invitations by e-mail: the invitation an admin sends, and what the admin API answers about it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

from authsvc.admin.schemas.answers import EPOCH, Answer
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.choices import InvitationRole
from authsvc.admin.schemas.types import _trimmed, _without_nul
from authsvc.core import validation

ROLE_DESCRIPTION = "What the account may do once made: `user` (default), `support` or `admin` of the domain."


class InvitationCreate(Schema):
    """An invitation of an address to the domain: a single-use link by e-mail, valid AUTHSVC_INVITATION_TTL."""

    # Written out as the types module's Text and Choice build them, which a type checker can read.
    email: Annotated[
        str,
        StringConstraints(min_length=1, max_length=320),
        AfterValidator(_without_nul(320)),
        AfterValidator(validation.email),
        Field(description="Not yet an account's in the domain."),
    ]
    name: Annotated[str, StringConstraints(max_length=200), AfterValidator(_without_nul(200))] | None = None
    role: Annotated[InvitationRole, BeforeValidator(_trimmed), Field(description=ROLE_DESCRIPTION)] | None = None


# Answers


class Invitation(Answer):
    id: str = Field(description="Hexadecimal.")
    domain: str
    email: str = Field(description="Lower-cased.")
    name: str
    role: InvitationRole = Field(description=ROLE_DESCRIPTION)
    state: Literal["pending", "accepted", "expired", "revoked"]
    created_by: str = Field(description="Who invited: `user:ID`, `api_key:ID` or `cli`.")
    created_at: int = Field(description=EPOCH)
    expires_at: int = Field(description=f"{EPOCH} When the link stops working (a resend moves it).")
    accepted_at: int | None
    revoked_at: int | None
    user: str | None = Field(description="The account the acceptance made.")


class SentInvitation(Invitation):
    link: str | None = Field(
        default=None,
        description="The invitation's link, only when this service cannot send e-mail (hand it to the person); "
        "otherwise it went by e-mail and is never shown.",
    )


class InvitationList(Answer):
    items: list[Invitation] = Field(description="The domain's invitations, oldest first.")
