"""Discovery: the authorisation server metadata (RFC 8414)."""

from __future__ import annotations

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from authlib.oidc.discovery import OpenIDProviderMetadata
from flask import Blueprint, Response, jsonify

from authsvc.auth.mfa import factors
from authsvc.core.models import (
    CLIENT_METADATA_OFF,
    DEVICE_CODE_GRANT_TYPE,
    JWT_BEARER_GRANT_TYPE,
    TOKEN_EXCHANGE_GRANT_TYPE,
    Domain,
)
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import profile, request_objects
from authsvc.oauth.client_authentication import CLIENT_ASSERTION_ALGORITHMS
from authsvc.oauth.clients import AUTH_METHODS, REGISTER_PATH
from authsvc.oauth.dpop import ALGORITHMS as DPOP_ALGORITHMS
from authsvc.oauth.oidc_request import PROMPTS_SUPPORTED, RESPONSE_MODES_SUPPORTED
from authsvc.oauth.pushed import PAR_PATH
from authsvc.oauth.revocation_introspection import INTROSPECTION_AUTH_METHODS
from authsvc.web import i18n

bp = Blueprint("well_known", __name__, url_prefix="/.well-known")


def server_metadata(domain: Domain) -> AuthorizationServerMetadata:
    """The RFC 8414 document of ``domain``, as fetched at this request's origin."""
    base = issuer()
    methods = list(AUTH_METHODS)
    document = AuthorizationServerMetadata(
        {
            "issuer": base,
            "authorization_endpoint": f"{base}/auth/oauth/authorize",
            "token_endpoint": f"{base}/auth/oauth/token",
            "revocation_endpoint": f"{base}/auth/oauth/revoke",
            "introspection_endpoint": f"{base}/auth/oauth/introspect",
            "userinfo_endpoint": f"{base}/auth/oauth/userinfo",
            "jwks_uri": f"{base}/auth/oauth/jwks",
            "end_session_endpoint": f"{base}/auth/oauth/end_session",
            "device_authorization_endpoint": f"{base}/auth/oauth/device_authorization",
            "registration_endpoint": f"{base}{REGISTER_PATH}",
            "scopes_supported": domain.scope_list,
            "response_types_supported": ["code"],
            "response_modes_supported": RESPONSE_MODES_SUPPORTED,
            "grant_types_supported": [
                "authorization_code",
                "refresh_token",
                "password",
                DEVICE_CODE_GRANT_TYPE,
                "client_credentials",
                TOKEN_EXCHANGE_GRANT_TYPE,
                JWT_BEARER_GRANT_TYPE,
            ],
            "code_challenge_methods_supported": ["S256", "plain"],
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": methods,
            "token_endpoint_auth_signing_alg_values_supported": list(CLIENT_ASSERTION_ALGORITHMS),
            "revocation_endpoint_auth_methods_supported": methods,
            "revocation_endpoint_auth_signing_alg_values_supported": list(CLIENT_ASSERTION_ALGORITHMS),
            "introspection_endpoint_auth_methods_supported": list(INTROSPECTION_AUTH_METHODS),
            "introspection_endpoint_auth_signing_alg_values_supported": list(CLIENT_ASSERTION_ALGORITHMS),
            # RFC 9449 5.1: the algorithms of DPoP proofs accepted.
            "dpop_signing_alg_values_supported": list(DPOP_ALGORITHMS),
            # RFC 9126 5: pushed requests; each application says whether it must push (RFC 9126 6).
            "pushed_authorization_request_endpoint": f"{base}{PAR_PATH}",
            "require_pushed_authorization_requests": False,
            # RFC 9101 and OpenID Connect Discovery: request objects by value, signed as client assertions are.
            # request_uri to fetch is not taken; RFC 9126 4: a pushed request's request_uri works regardless.
            "request_parameter_supported": True,
            "request_uri_parameter_supported": False,
            "request_object_signing_alg_values_supported": list(request_objects.ALGORITHMS),
            # draft-ietf-oauth-client-id-metadata-document: a client_id may be its document's URL
            # (authsvc.oauth.metadata_documents), where the domain reads such documents.
            "client_id_metadata_document_supported": domain.client_metadata_documents != CLIENT_METADATA_OFF,
        }
    )
    return profile.narrow_metadata(document) if profile.fapi2(domain) else document


# OpenID Connect Core 5.1: the claims we may state (by scope: profile, email, groups).
CLAIMS_SUPPORTED = [
    "iss",
    "sub",
    "aud",
    "azp",
    "exp",
    "iat",
    "auth_time",
    "nonce",
    "at_hash",
    "sid",
    "amr",
    "acr",
    "name",
    "locale",
    "email",
    "email_verified",
    "groups",
]


def provider_metadata(domain: Domain) -> OpenIDProviderMetadata:
    """OpenID Connect Discovery 1.0: RFC 8414's document with the provider's own fields."""
    return OpenIDProviderMetadata(
        {
            **server_metadata(domain),
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            "claims_supported": CLAIMS_SUPPORTED,
            # Core 3.1.2.1 ui_locales picks the pages' language; the claims are stated in one language only.
            "ui_locales_supported": i18n.languages().tags(),
            "claims_locales_supported": [i18n.DEFAULT],
            # The claims parameter is not read: what a token states follows from its scopes.
            "claims_parameter_supported": False,
            "prompt_values_supported": PROMPTS_SUPPORTED,
            # acr_values=mfa asks for a sign-in with a second factor (step-up); ID tokens then say acr "mfa".
            "acr_values_supported": [factors.MFA_ACR],
            # Back-Channel Logout 1.0: Logout Tokens carry sid, as the ID tokens do.
            "backchannel_logout_supported": True,
            "backchannel_logout_session_supported": True,
        }
    )


def _document(metadata: dict) -> Response:
    response = jsonify(dict(metadata))
    # The document depends on the Host (domain, issuer), so shared caches must key on it.
    response.headers["Vary"] = "Host"
    return response


@bp.get("/oauth-authorization-server")
def oauth_authorization_server() -> Response:
    return _document(server_metadata(current_domain()))


@bp.get("/openid-configuration")
def openid_configuration() -> Response:
    return _document(provider_metadata(current_domain()))
