"""Users: creating one and changing one (rights, password, disabling), and linking an SSO account."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from authsvc.admin.schemas.answers import DECIMAL_ID, Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import SECRET, DomainId, Omissible, Strings, Text
from authsvc.core import validation

Email = Annotated[str, Text(320, min_length=1, rule=validation.email), Field(description="Unique in the domain.")]
Password = Annotated[
    str,
    Text(1024, min_length=8, rule=validation.password),
    SECRET,
    Field(description="Never shown. A new password ends the user's sessions and revokes their tokens."),
]


class UserFields(Schema):
    """What a user is: name, e-mail, password, rights and groups."""

    email: Omissible[Email] = None
    password: Omissible[Password] = None
    name: Omissible[Annotated[str, Text(200)]] = None
    service_account: Omissible[bool] = None
    admin: Omissible[bool] = None
    support: Omissible[bool] = None
    groups: Omissible[Strings] = None
    system_admin: Omissible[bool] = Field(default=None, description="Only a system admin may grant or remove it.")


class UserCreate(UserFields):
    """A new user of the domain."""

    email: Email
    domain: Omissible[DomainId] = None


class UserChange(UserFields):
    """Only the fields given change. Disabling ends the user's sessions and revokes their tokens; nobody may
    disable, demote or delete themselves."""

    disabled: Omissible[bool] = None
    email_verified: Omissible[bool] = Field(
        default=None,
        description="Whether the address is verified (the email_verified claim). A new email sets it to false "
        "unless given, and a link to confirm it is sent to the new address.",
    )


# Answers


class User(Answer):
    id: str = Field(description=DECIMAL_ID)
    email: str = Field(description="Lower-cased.")
    email_verified: bool = Field(
        description="The email_verified claim: true when an admin created the user, the provider that did "
        "vouched for the address, or its owner followed the link sent to it."
    )
    name: str
    domain: str = Field(description="The domain's id.")
    service_account: bool = Field(description="May use the password grant.")
    admin: bool
    support: bool
    groups: list[str]
    disabled: bool
    system_admin: bool = Field(description="Administers every domain.")
    provisioned_by: str | None = Field(
        description="`scim` once a SCIM client (docs/scim.md) created or adopted the user; else null."
    )


class UserList(Page):
    items: list[User]


class Identity(Answer):
    """A link between a user and their account at an SSO provider."""

    user: str
    provider: str
    subject: str


class FactorsRemoved(Answer):
    factors_removed: int = Field(description="How many second factors were removed (the recovery codes go too).")
