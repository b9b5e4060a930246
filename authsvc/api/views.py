"""The platform API surface of this service (docs/platform.md#inspect): inspect, scopes, the OpenAPI document."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from authsvc.api import fastpath, lookup
from authsvc.api.protected_resource import PREFIX
from authsvc.core.headers import no_store
from authsvc.core.policy import unbudgeted
from authsvc.core.tenancy import current_domain, issuer

bp = Blueprint("api", __name__, url_prefix=PREFIX)


@bp.get(fastpath.RULE)
@no_store
def inspect() -> Response:
    """Describe the credential presented, in the claims shape PlaceOS clients read."""
    # On every API request of the platform: one statement finds the domain,
    # the credential and its user together. A bearer token or API key in a
    # header usually never gets here: authsvc.api.fastpath answers it first.
    failed = fastpath.database_error_left()
    if failed is not None:
        raise failed
    return jsonify(lookup.claims(lookup.authenticate(any_audience=True), issuer()))


@bp.get("/scopes")
@unbudgeted
def scopes() -> Response:
    """The scopes the request's domain knows; public, as in the metadata's scopes_supported."""
    domain = current_domain()
    return jsonify(domain=domain.host, scopes=domain.scope_list)
