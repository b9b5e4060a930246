"""The platform API surface of this service (SPEC 4.6): inspect, scopes, the OpenAPI document."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, jsonify, request

from authsvc import credentials, delegated, fastpath, validation
from authsvc.database import db
from authsvc.errors import ApiError
from authsvc.models import User
from authsvc.tenancy import current_domain, issuer

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


def _resource_token_response(user: User) -> Response:
    try:
        answer = delegated.resource_token(user, request.args.get("provider"))
    except delegated.ResourceTokenError as exc:
        raise ApiError(exc.status, exc.error, exc.description) from None
    response = jsonify(answer)
    response.headers["Cache-Control"] = "no-store"
    return response


def _admin_target(user_id: str) -> User:
    """The user ``user_id`` of this domain, for a caller with an admin credential."""
    domain = current_domain()
    credential = credentials.authenticate(domain)
    if not credential.admin:
        raise ApiError(403, "forbidden", "An admin credential is needed.")
    number = validation.record_id(user_id)
    user = db.session.get(User, number) if number is not None else None
    if user is None or user.domain_id != domain.id:
        raise ApiError(404, "not_found", "No such user.")
    return user


@bp.post("/users/resource_token")
def own_resource_token() -> Response:
    """The caller's own delegated provider token (SPEC 5.4)."""
    return _resource_token_response(credentials.authenticate(current_domain()).user)


@bp.delete("/users/resource_token")
def clear_own_resource_token() -> Response:
    user = credentials.authenticate(current_domain()).user
    return jsonify(cleared=delegated.clear_tokens(user))


@bp.post("/users/<user_id>/resource_token")
def user_resource_token(user_id: str) -> Response:
    """A user's delegated provider token, for server-side automation with an admin credential."""
    return _resource_token_response(_admin_target(user_id))


@bp.delete("/users/<user_id>/resource_token")
def clear_user_resource_token(user_id: str) -> Response:
    return jsonify(cleared=delegated.clear_tokens(_admin_target(user_id)))


@bp.get("/scopes")
def scopes() -> Response:
    """The scopes the request's domain knows; public, as in the metadata's scopes_supported."""
    domain = current_domain()
    return jsonify(domain=domain.host, scopes=domain.scope_list)


OPENAPI_DOCUMENT = Path(__file__).resolve().parent.parent / "openapi.json"


@bp.get("/openapi.json")
def openapi() -> Response:
    return Response(OPENAPI_DOCUMENT.read_bytes(), mimetype="application/json")
