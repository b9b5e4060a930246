"""What the SCIM views do (authsvc.scim.views routes here): read the request, call the service functions, answer.

Imported on the first SCIM request, not with the app: scim2-models (and pydantic
under it) cost a worker memory that most deployments never use.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from flask import Response, request
from pydantic import ValidationError
from scim2_models import Context, ResponseParameters, SCIMException
from werkzeug.exceptions import HTTPException

from authsvc.core.errors import ANSWERS, ApiError, answer, outage
from authsvc.core.request_state import part
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain
from authsvc.scim import discovery, groups, protocol, queries, users
from authsvc.scim.auth import Provisioner, authenticate

log = logging.getLogger(__name__)


def authenticate_the_client() -> None:
    """Authenticate the request's SCIM client (before every SCIM view)."""
    # SCIM bodies (a group of many members) may be larger than the service's other requests.
    request.max_content_length = settings().scim_max_body
    part(ScimClient).provisioner = authenticate(current_domain())


@dataclass
class ScimClient:
    """The request's authenticated SCIM client (authsvc.core.request_state.part)."""

    provisioner: Provisioner | None = None


def _provisioner() -> Provisioner:
    provisioner = part(ScimClient).provisioner
    if provisioner is None:  # every SCIM view runs after authenticate_the_client
        raise RuntimeError("the SCIM client was not authenticated")
    return provisioner


def scim_error(exc: SCIMException) -> Response:
    answer = protocol.exception_answer(exc)
    if exc.status == 401:
        answer.headers["WWW-Authenticate"] = 'Bearer realm="authsvc"'
    return answer


def invalid(exc: ValidationError) -> Response:
    return scim_error(queries.validation_failure(exc))


def api_error(exc: ApiError) -> Response:
    return protocol.error(exc.status, exc.description, headers=exc.headers)


def unexpected(exc: Exception) -> Response:
    """Any exception but ApiError and HTTPException: SCIM's own, a schema's, an outage, a feature's, or a fault.

    Flask looks through a blueprint's handlers before the app's, whatever their classes: the
    blueprint's handler for Exception is found before the app's for a database or Redis outage,
    so the rules the app's handlers apply are applied here, in SCIM's error format.
    """
    if isinstance(exc, SCIMException):
        return scim_error(exc)
    if isinstance(exc, ValidationError):
        return invalid(exc)
    description = outage(exc)
    if description is not None:
        log.warning("outage on %s %s: %s", request.method, request.path, description)
        return protocol.error(503, description, headers={"Retry-After": str(settings().retry_after)})
    if isinstance(exc, tuple(ANSWERS)):
        return api_error(answer(exc))
    log.exception("unhandled error on %s %s", request.method, request.path)
    return protocol.error(500, "The server met an unexpected condition.")


def http_error(exc: HTTPException) -> Response:
    if exc.code == 413:
        limit = settings().scim_max_body
        return protocol.error(413, f"The request body is larger than {limit} bytes.")
    return protocol.error(exc.code or 400, exc.description or exc.name)


def _resource(resource: Any, status: int = 200) -> Response:
    parameters: ResponseParameters[Any] = ResponseParameters.model_validate(
        {k: request.args[k] for k in ("attributes", "excludedAttributes") if request.args.get(k)}
    )
    ctx = Context.RESOURCE_CREATION_RESPONSE if status == 201 else Context.RESOURCE_QUERY_RESPONSE
    headers = {"ETag": resource.meta.version}
    if status == 201:
        headers["Location"] = resource.meta.location
    return protocol.answer(resource.model_dump(scim_ctx=ctx, response_parameters=parameters), status, headers)


def _search_body() -> dict[str, str]:
    payload = protocol.body()
    args = {}
    for key, value in payload.items():
        if key == "schemas":
            continue
        args[key] = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    return args


# Discovery -------------------------------------------------------------------


def service_provider_config() -> Response:
    return protocol.answer(discovery.service_provider_config())


def resource_types() -> Response:
    return protocol.answer(discovery.resource_types())


def resource_type(name: str) -> Response:
    return protocol.answer(discovery.resource_type(name))


def schemas() -> Response:
    return protocol.answer(discovery.schemas())


def schema(schema_id: str) -> Response:
    return protocol.answer(discovery.schema(schema_id))


# Users -----------------------------------------------------------------------


def list_users() -> Response:
    return protocol.answer(users.search(_provisioner(), queries.search_request(users.ScimUser, request.args)))


def search_users() -> Response:
    return protocol.answer(users.search(_provisioner(), queries.search_request(users.ScimUser, _search_body())))


def create_user() -> Response:
    return _resource(users.create(_provisioner(), protocol.body()), 201)


def get_user(user_id: str) -> Response:
    return _resource(users.read(users.find(_provisioner(), user_id)))


def replace_user(user_id: str) -> Response:
    user = users.find(_provisioner(), user_id, writing=True)
    return _resource(users.replace(_provisioner(), user, protocol.body()))


def patch_user(user_id: str) -> Response:
    user = users.find(_provisioner(), user_id, writing=True)
    return _resource(users.patch(_provisioner(), user, protocol.body()))


def delete_user(user_id: str) -> Response:
    users.delete(_provisioner(), users.find(_provisioner(), user_id, writing=True))
    return Response(status=204)


# Groups ----------------------------------------------------------------------


def list_groups() -> Response:
    search = queries.search_request(groups.ScimGroupResource, request.args)
    return protocol.answer(groups.search(_provisioner(), search))


def search_groups() -> Response:
    search = queries.search_request(groups.ScimGroupResource, _search_body())
    return protocol.answer(groups.search(_provisioner(), search))


def create_group() -> Response:
    return _resource(groups.create(_provisioner(), protocol.body()), 201)


def get_group(group_id: str) -> Response:
    return _resource(groups.read(groups.find(_provisioner(), group_id)))


def replace_group(group_id: str) -> Response:
    group = groups.find(_provisioner(), group_id)
    return _resource(groups.replace(_provisioner(), group, protocol.body()))


def patch_group(group_id: str) -> Response:
    group = groups.find(_provisioner(), group_id)
    return _resource(groups.patch(_provisioner(), group, protocol.body()))


def delete_group(group_id: str) -> Response:
    groups.delete_group(_provisioner(), groups.find(_provisioner(), group_id))
    return Response(status=204)


def search_everything() -> Response:
    # RFC 7644 3.4.3 lets a client search every resource type at once; 501 says it is not offered here.
    return protocol.error(501, "Search /Users/.search or /Groups/.search; searching every type at once is not offered.")


_ENDPOINTS = {"ServiceProviderConfig", "ResourceTypes", "Schemas", "Users", "Groups"}


def not_found(anything: str) -> Response:
    parts = anything.split("/")
    if parts[0] in _ENDPOINTS and len(parts) <= 2:
        # An endpoint that exists, with a method it does not take (RFC 7231 6.5.5).
        return protocol.error(405, f"{request.method} is not allowed on /{anything}.")
    return protocol.error(404, f"No SCIM endpoint /{anything}.")
