"""Discovery: the authorisation server metadata (RFC 8414)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from authsvc.endpoints import server_metadata
from authsvc.tenancy import current_domain

bp = Blueprint("well_known", __name__, url_prefix="/.well-known")


@bp.get("/oauth-authorization-server")
def oauth_authorization_server() -> Response:
    response = jsonify(dict(server_metadata(current_domain())))
    # The document depends on the Host (domain, issuer), so shared caches must key on it.
    response.headers["Vary"] = "Host"
    return response
