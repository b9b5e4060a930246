"""The platform API surface of this service (SPEC 4.6): inspect, scopes, the OpenAPI document."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, jsonify, request

from authsvc import admin, credentials, delegated, fastpath
from authsvc.errors import ApiError
from authsvc.models import User
from authsvc.tenancy import current_domain, issuer
from authsvc.views.admin_api import admin_errors, current_actor

bp = Blueprint("api", __name__, url_prefix="/api/engine/v2")


@bp.get("/api_keys/inspect")
def inspect() -> Response:
    """Describe the credential presented, in the claims shape PlaceOS clients read."""
    # On every API request of the platform: one statement finds the domain,
    # the credential and its user together. A bearer token or API key in a
    # header usually never gets here: authsvc.fastpath answers it first.
    failed = request.environ.pop(fastpath.DATABASE_ERROR, None)
    if failed is not None:
        raise failed
    claims = credentials.claims(credentials.authenticate(), issuer())
    response = jsonify(claims)
    response.headers["Cache-Control"] = "no-store"
    return response


def _resource_token_response(fetch: Callable[[str | None], dict[str, Any]]) -> Response:
    try:
        answer = fetch(request.args.get("provider"))
    except delegated.ResourceTokenError as exc:
        raise ApiError(exc.status, exc.error, exc.description) from None
    response = jsonify(answer)
    response.headers["Cache-Control"] = "no-store"
    return response


def _own_delegating_user() -> User:
    """The caller's user, for a credential granted the ``resource_token`` scope."""
    credential = credentials.authenticate(current_domain())
    credentials.require_scopes(credential, "resource_token")
    return credential.user


@bp.post("/users/resource_token")
def own_resource_token() -> Response:
    """The caller's own delegated provider token (SPEC 5.4)."""
    user = _own_delegating_user()
    return _resource_token_response(lambda provider: delegated.resource_token(user, provider))


@bp.delete("/users/resource_token")
def clear_own_resource_token() -> Response:
    return jsonify(cleared=delegated.clear_tokens(_own_delegating_user()))


@bp.post("/users/<user_id>/resource_token")
@admin_errors
def user_resource_token(user_id: str) -> Response:
    """A user's delegated provider token, for server-side automation with an admin credential."""
    actor = current_actor("resource_token")
    user = admin.get(actor, User, user_id)
    return _resource_token_response(lambda provider: admin.user_resource_token(actor, user, provider))


@bp.delete("/users/<user_id>/resource_token")
@admin_errors
def clear_user_resource_token(user_id: str) -> Response:
    actor = current_actor("resource_token")
    return jsonify(cleared=admin.clear_user_resource_tokens(actor, admin.get(actor, User, user_id)))


@bp.get("/scopes")
def scopes() -> Response:
    """The scopes the request's domain knows; public, as in the metadata's scopes_supported."""
    domain = current_domain()
    return jsonify(domain=domain.host, scopes=domain.scope_list)


OPENAPI_DOCUMENT = Path(__file__).resolve().parent.parent / "openapi.json"


@bp.get("/openapi.json")
def openapi() -> Response:
    return Response(OPENAPI_DOCUMENT.read_bytes(), mimetype="application/json")
