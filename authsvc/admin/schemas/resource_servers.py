"""Protected resources of a domain (RFC 8707, RFC 9728): what a token asked for with ``resource`` is for."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from authsvc.admin.schemas.answers import DECIMAL_ID, EPOCH, Answer
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import DomainId, Name, Omissible, Text
from authsvc.core import validation

ResourceUri = Annotated[
    str,
    Text(2000, min_length=1, rule=validation.resource_indicator),
    Field(description="The resource's URI (RFC 8707 `resource`): absolute, without a fragment."),
]
ResourceScopes = Annotated[
    str,
    Text(2000, min_length=1, rule=validation.scopes),
    Field(description="Space-separated scopes of the domain that a token for the resource may carry."),
]


class ResourceServerCreate(Schema):
    """A protected resource: a token asked for with its URI gets it as `aud`, and only its scopes."""

    domain: Omissible[DomainId] = None
    uri: ResourceUri
    name: Name
    scopes: ResourceScopes


class ResourceServerChange(Schema):
    """Only the fields given change; tokens already issued keep their `aud` and scopes."""

    uri: Omissible[ResourceUri] = None
    name: Omissible[Name] = None
    scopes: Omissible[ResourceScopes] = None


# Answers


class ResourceServer(Answer):
    id: str = Field(description=DECIMAL_ID)
    domain: str
    uri: str
    name: str
    scopes: str
    created_at: int = Field(description=EPOCH)


class ResourceServerList(Answer):
    items: list[ResourceServer] = Field(description="The domain's protected resources, oldest first.")
