"""Users: creating one and changing one (rights, password, disabling), and linking an SSO account."""

from __future__ import annotations

from pydantic import Field

from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import DomainId, Strings, Text
from authsvc.core import validation

Email = Text(320, min_length=1, rule=validation.email, description="Unique in the domain.")
Password = Text(
    1024,
    rule=validation.password,
    description="Never shown. A new password ends the user's sessions and revokes their tokens.",
    json_schema_extra={"writeOnly": True, "minLength": 8},
)


class UserFields(Schema):
    """What a user is: name, e-mail, password, rights and groups."""

    email: Email = None
    password: Password = None
    name: Text(200) = None
    service_account: bool = None
    admin: bool = None
    support: bool = None
    groups: Strings() = None
    system_admin: bool = Field(default=None, description="Only a system admin may grant or remove it.")


class UserCreate(UserFields):
    """A new user of the domain."""

    email: Email
    domain: DomainId = None


class UserChange(UserFields):
    """Only the fields given change. Disabling ends the user's sessions and revokes their tokens; nobody may
    disable, demote or delete themselves."""

    disabled: bool = None
