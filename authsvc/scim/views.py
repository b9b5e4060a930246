"""SCIM 2.0 under /scim/v2 (RFC 7644): the routes, each handing over to authsvc.scim.handlers.

Every request is authenticated (authsvc.scim.auth), rate limited per credential (declared on
the blueprint, applied by authsvc.app.limits) and answered in ``application/scim+json``; every
error, including 401, 404, 413 and 429, in RFC 7644 3.12's error shape.

The handlers (and scim2-models, pydantic under it) are imported on the first
SCIM request: a worker that never serves SCIM never loads them.
"""

from __future__ import annotations

from types import ModuleType

from flask import Blueprint, Response
from flask.blueprints import BlueprintSetupState
from werkzeug.exceptions import HTTPException
from werkzeug.routing import PathConverter

from authsvc.core.errors import ApiError
from authsvc.core.policy import Rate, rate_limited

# Every request counts per credential, before the blueprint's own before_request authenticates it.
bp = rate_limited(Rate.SCIM_CREDENTIAL)(Blueprint("scim", __name__, url_prefix="/scim/v2"))


class _AnyRest(PathConverter):
    """The rest of the path, whatever its characters: Werkzeug's ``path`` stops at a newline after a slash
    (its ``.`` does not match one), and such a path got the service's 404, not SCIM's; or, with a doubled
    slash (``/Users//%0A``), Werkzeug's HTML 308 to the path with its slashes merged, which it tries only
    when nothing matched the path as sent."""

    regex = r"[\s\S]+?"
    part_isolating = False  # Werkzeug would guess True: the pattern names no slash


@bp.record_once
def _converter(state: BlueprintSetupState) -> None:
    state.app.url_map.converters["scim_rest"] = _AnyRest


def _handlers() -> ModuleType:
    from authsvc.scim import handlers

    return handlers


@bp.before_request
def authenticate_the_client() -> None:
    _handlers().authenticate_the_client()


@bp.errorhandler(ApiError)
def api_error(exc: ApiError) -> Response:
    return _handlers().api_error(exc)


@bp.errorhandler(HTTPException)
def http_error(exc: HTTPException) -> Response:
    return _handlers().http_error(exc)


@bp.errorhandler(Exception)
def unexpected(exc: Exception) -> Response:
    # SCIM's own exceptions, a schema's ValidationError and outages land here too (the handlers tell them apart).
    return _handlers().unexpected(exc)


# Discovery -------------------------------------------------------------------


@bp.get("/ServiceProviderConfig")
def service_provider_config() -> Response:
    return _handlers().service_provider_config()


@bp.get("/ResourceTypes")
def resource_types() -> Response:
    return _handlers().resource_types()


@bp.get("/ResourceTypes/<name>")
def resource_type(name: str) -> Response:
    return _handlers().resource_type(name)


@bp.get("/Schemas")
def schemas() -> Response:
    return _handlers().schemas()


@bp.get("/Schemas/<schema_id>")
def schema(schema_id: str) -> Response:
    return _handlers().schema(schema_id)


# Users -----------------------------------------------------------------------


@bp.get("/Users")
def list_users() -> Response:
    return _handlers().list_users()


@bp.post("/Users/.search")
def search_users() -> Response:
    return _handlers().search_users()


@bp.post("/Users")
def create_user() -> Response:
    return _handlers().create_user()


@bp.get("/Users/<user_id>")
def get_user(user_id: str) -> Response:
    return _handlers().get_user(user_id)


@bp.put("/Users/<user_id>")
def replace_user(user_id: str) -> Response:
    return _handlers().replace_user(user_id)


@bp.patch("/Users/<user_id>")
def patch_user(user_id: str) -> Response:
    return _handlers().patch_user(user_id)


@bp.delete("/Users/<user_id>")
def delete_user(user_id: str) -> Response:
    return _handlers().delete_user(user_id)


# Groups ----------------------------------------------------------------------


@bp.get("/Groups")
def list_groups() -> Response:
    return _handlers().list_groups()


@bp.post("/Groups/.search")
def search_groups() -> Response:
    return _handlers().search_groups()


@bp.post("/Groups")
def create_group() -> Response:
    return _handlers().create_group()


@bp.get("/Groups/<group_id>")
def get_group(group_id: str) -> Response:
    return _handlers().get_group(group_id)


@bp.put("/Groups/<group_id>")
def replace_group(group_id: str) -> Response:
    return _handlers().replace_group(group_id)


@bp.patch("/Groups/<group_id>")
def patch_group(group_id: str) -> Response:
    return _handlers().patch_group(group_id)


@bp.delete("/Groups/<group_id>")
def delete_group(group_id: str) -> Response:
    return _handlers().delete_group(group_id)


@bp.post("/.search")
def search_everything() -> Response:
    return _handlers().search_everything()


@bp.route("/<scim_rest:anything>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
def not_found(anything: str) -> Response:
    return _handlers().not_found(anything)
