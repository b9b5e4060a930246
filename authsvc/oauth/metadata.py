"""Discovery: the authorisation server metadata (RFC 8414)."""

from __future__ import annotations

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from flask import Blueprint, Response, jsonify

from authsvc.core.models import Domain
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth.clients import AUTH_METHODS
from authsvc.oauth.endpoints import INTROSPECTION_AUTH_METHODS

bp = Blueprint("well_known", __name__, url_prefix="/.well-known")


def server_metadata(domain: Domain) -> AuthorizationServerMetadata:
    """The RFC 8414 document of ``domain``, as fetched at this request's origin."""
    base = issuer()
    methods = list(AUTH_METHODS)
    return AuthorizationServerMetadata(
        {
            "issuer": base,
            "authorization_endpoint": f"{base}/auth/oauth/authorize",
            "token_endpoint": f"{base}/auth/oauth/token",
            "revocation_endpoint": f"{base}/auth/oauth/revoke",
            "introspection_endpoint": f"{base}/auth/oauth/introspect",
            "scopes_supported": domain.scope_list,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", "password", "client_credentials"],
            "code_challenge_methods_supported": ["S256", "plain"],
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": methods,
            "revocation_endpoint_auth_methods_supported": methods,
            "introspection_endpoint_auth_methods_supported": list(INTROSPECTION_AUTH_METHODS),
        }
    )


@bp.get("/oauth-authorization-server")
def oauth_authorization_server() -> Response:
    response = jsonify(dict(server_metadata(current_domain())))
    # The document depends on the Host (domain, issuer), so shared caches must key on it.
    response.headers["Vary"] = "Host"
    return response
