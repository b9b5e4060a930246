"""The discovery endpoints' answers (RFC 7644 4): ServiceProviderConfig, ResourceTypes, Schemas."""

from __future__ import annotations

from typing import Any

from flask import url_for
from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    ETag,
    External,
    Filter,
    Group,
    ListResponse,
    Meta,
    NotFoundException,
    Patch,
    Reference,
    Resource,
    ResourceType,
    Schema,
    ServiceProviderConfig,
    Sort,
    User,
)

from authsvc.core.settings import settings
from authsvc.scim import queries

_RESOURCES: dict[str, type[Resource[Any]]] = {"User": User, "Group": Group}


def _passwords() -> bool:
    return bool(settings().scim_passwords)


def service_provider_config() -> dict[str, Any]:
    config = ServiceProviderConfig(
        documentation_uri=Reference[External]("https://datatracker.ietf.org/doc/html/rfc7644"),
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=queries.MAX_COUNT),
        change_password=ChangePassword(supported=_passwords()),
        sort=Sort(supported=True),
        etag=ETag(supported=True),
        authentication_schemes=[
            AuthenticationScheme(
                type=AuthenticationScheme.Type.oauthbearertoken,
                name="OAuth Bearer Token",
                description="An API key of a domain admin, or a client-credentials token, with the scope scim.",
                spec_uri=Reference[External]("https://datatracker.ietf.org/doc/html/rfc6750"),
                primary=True,
            )
        ],
    )
    location = url_for("scim.service_provider_config", _external=True)
    config.meta = Meta(resource_type="ServiceProviderConfig", location=location)
    return config.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def _resource_type(name: str) -> ResourceType:
    resource_type = ResourceType.from_resource(_RESOURCES[name])
    resource_type.meta = Meta(
        resource_type="ResourceType", location=url_for("scim.resource_type", name=name, _external=True)
    )
    return resource_type


def _schema(name: str) -> Schema:
    schema = _RESOURCES[name].to_schema()
    if name == "User" and not _passwords():
        # Without AUTHSVC_SCIM_PASSWORDS a SCIM client cannot set a password: the schema does not offer one.
        schema.attributes = [attribute for attribute in schema.attributes or [] if attribute.name != "password"]
    schema.meta = Meta(resource_type="Schema", location=url_for("scim.schema", schema_id=schema.id, _external=True))
    return schema


def _listing(listing: type[ListResponse[Any]], items: list[Any]) -> dict[str, Any]:
    page = listing(total_results=len(items), start_index=1, items_per_page=len(items), resources=items)
    return page.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def resource_types() -> dict[str, Any]:
    return _listing(ListResponse[ResourceType], [_resource_type(name) for name in _RESOURCES])


def resource_type(name: str) -> dict[str, Any]:
    if name not in _RESOURCES:
        raise NotFoundException(detail=f"No resource type {name}.")
    return _resource_type(name).model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def schemas() -> dict[str, Any]:
    return _listing(ListResponse[Schema], [_schema(name) for name in _RESOURCES])


def schema(schema_id: str) -> dict[str, Any]:
    for name, model in _RESOURCES.items():
        if str(model.__schema__).lower() == schema_id.lower():
            return _schema(name).model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    raise NotFoundException(detail=f"No schema {schema_id}.")
