"""Client metadata of dynamic registration (RFC 7591 2): what a client may register, checked, and read back.

The rules are the service's own, applied to what a client sends about itself:
redirect URIs as an admin's are checked (authsvc.core.validation), scopes
within the domain's (never a reserved one), only the grants a client can use
without an admin's help, and the client authentication methods the token
endpoint knows. A ``logo_uri`` is kept as the client's own claim
(``declare_logo``): never fetched, the consent page names it as not verified
(docs/branding.md, "Consent"). Metadata the service does not keep
(``contacts``, ...) is ignored, as RFC 7591 2 allows; the answer names only
what was registered.
"""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc7591 import ClientMetadataClaims, InvalidClientMetadataError, InvalidRedirectURIError
from sqlalchemy import select

from authsvc.core import branding, validation
from authsvc.core.database import db
from authsvc.core.models import DEVICE_CODE_GRANT_TYPE, RESERVED_SCOPES, Application, ApplicationLogo, Domain
from authsvc.core.settings import settings
from authsvc.oauth import client_authentication, profile

# The grants a registered client may ask for. client_credentials acts as a service account, which
# only a domain admin binds; the password grant is not for new clients (RFC 9700 2.4).
REGISTRABLE_GRANT_TYPES = ["authorization_code", "refresh_token", DEVICE_CODE_GRANT_TYPE]
ADMIN_ONLY_GRANT_TYPES = {
    "client_credentials": "client_credentials acts as a service account, which only a domain admin can bind: "
    "ask one for an application",
    "password": "the password grant is not available to registered clients (RFC 9700)",
}
SECRET_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]
REGISTRABLE_AUTH_METHODS = [*SECRET_AUTH_METHODS, "none", "private_key_jwt"]
# What a client may ask its ID tokens to be signed with (id_token_signed_response_alg,
# OpenID Connect Dynamic Client Registration 1.0, section 2): the algorithms we sign with.
REGISTRABLE_ID_TOKEN_ALGORITHMS = ["RS256", "ES256"]
MAX_URIS = 20
MAX_URI_LENGTH = 2000


def _printable(text: str) -> str:
    """``text`` fit for an error description (RFC 6749 allows only some ASCII there)."""
    return "".join(c if 0x20 <= ord(c) <= 0x7E and c not in '"\\' else "?" for c in text)[:300]


def invalid(message: str) -> InvalidClientMetadataError:
    return InvalidClientMetadataError(_printable(message))


class RegisteredClientMetadata(ClientMetadataClaims):
    """RFC 7591 metadata as this service registers it. ``params`` is the domain's registration policy
    (see ``registration_policy``): its scopes, and whether the FAPI 2.0 profile applies."""

    REGISTERED_CLAIMS = [
        "redirect_uris",
        "token_endpoint_auth_method",
        "grant_types",
        "response_types",
        "client_name",
        "scope",
        "jwks_uri",
        "jwks",
        # OpenID Connect Registration 1.0, RP-Initiated and Back-Channel Logout 1.0.
        "post_logout_redirect_uris",
        "backchannel_logout_uri",
        "id_token_signed_response_alg",
        # RFC 9449 5.2.
        "dpop_bound_access_tokens",
        # RFC 9126 6: its authorisation requests must be pushed first.
        "require_pushed_authorization_requests",
        # Shown on the consent page as the client's claim, not verified; never fetched.
        "logo_uri",
    ]

    @classmethod
    def get_claims_options(cls, metadata: dict) -> dict:
        # Every rule is checked in validate(), with a message that says what is wrong.
        return {}

    def validate(self, now: Any = None, leeway: int = 0) -> None:
        self._grant_types()
        self._response_types()
        self["redirect_uris"] = _uris(self, "redirect_uris", InvalidRedirectURIError)
        if "authorization_code" in self["grant_types"] and not self["redirect_uris"]:
            raise InvalidRedirectURIError("redirect_uris is required for the authorization_code grant.")
        self["post_logout_redirect_uris"] = _uris(self, "post_logout_redirect_uris", InvalidClientMetadataError)
        self._auth_method()
        self._scope()
        self._client_name()
        logo_uri = _string(self, "logo_uri", MAX_URI_LENGTH)
        if logo_uri is not None:
            try:
                self["logo_uri"] = branding.link(logo_uri)
            except validation.Invalid as exc:
                raise invalid(f"logo_uri: {exc}") from None
        backchannel = _string(self, "backchannel_logout_uri", MAX_URI_LENGTH)
        if backchannel is not None:
            self["backchannel_logout_uri"] = outbound_url(
                backchannel, "backchannel_logout_uri", settings().backchannel_allow_private_networks
            )
        alg = _string(self, "id_token_signed_response_alg", 10)
        if alg is not None and alg not in REGISTRABLE_ID_TOKEN_ALGORITHMS:
            raise invalid(f"id_token_signed_response_alg must be one of {', '.join(REGISTRABLE_ID_TOKEN_ALGORITHMS)}.")
        dpop = self.get("dpop_bound_access_tokens")
        if dpop is not None and not isinstance(dpop, bool):
            raise invalid("dpop_bound_access_tokens must be true or false.")
        par = self.get("require_pushed_authorization_requests")
        if par is not None and not isinstance(par, bool):
            raise invalid("require_pushed_authorization_requests must be a boolean.")
        if self.params.get("fapi2"):
            self._profile()
        for name in list(self):
            if self[name] is None or self[name] == []:
                if name not in ("redirect_uris", "grant_types", "response_types"):
                    del self[name]

    def _grant_types(self) -> None:
        grant_types = _list(self, "grant_types") or ["authorization_code"]
        for grant_type in grant_types:
            if grant_type in ADMIN_ONLY_GRANT_TYPES:
                raise invalid(f"grant_types: {ADMIN_ONLY_GRANT_TYPES[grant_type]}.")
            if grant_type not in REGISTRABLE_GRANT_TYPES:
                raise invalid(f"grant_types: {grant_type} is not supported; use {', '.join(REGISTRABLE_GRANT_TYPES)}.")
        if grant_types == ["refresh_token"]:
            raise invalid("grant_types: refresh_token needs a grant that issues refresh tokens.")
        self["grant_types"] = list(dict.fromkeys(grant_types))

    def _response_types(self) -> None:
        # RFC 7591 2.1: response_types and grant_types must agree; "code" goes with authorization_code.
        code = "authorization_code" in self["grant_types"]
        response_types = _list(self, "response_types")
        if response_types is None:
            response_types = ["code"] if code else []
        if any(r != "code" for r in response_types):
            raise invalid("response_types: only code is supported.")
        if bool(response_types) != code:
            raise invalid("response_types code and grant type authorization_code go together (RFC 7591 2.1).")
        self["response_types"] = list(dict.fromkeys(response_types))

    def _auth_method(self) -> None:
        method = _string(self, "token_endpoint_auth_method", 40) or "client_secret_basic"
        if method not in REGISTRABLE_AUTH_METHODS:
            raise invalid(f"token_endpoint_auth_method must be one of {', '.join(REGISTRABLE_AUTH_METHODS)}.")
        self["token_endpoint_auth_method"] = method
        jwks = self.get("jwks")
        jwks_uri = _string(self, "jwks_uri", MAX_URI_LENGTH)
        if method != "private_key_jwt":
            if jwks is not None or jwks_uri is not None:
                raise invalid("jwks and jwks_uri are used only with token_endpoint_auth_method private_key_jwt.")
            return
        if (jwks is None) == (jwks_uri is None):
            raise invalid("private_key_jwt needs exactly one of jwks and jwks_uri.")
        self["jwks"], self["jwks_uri"] = client_keys(jwks, jwks_uri)

    def _profile(self) -> None:
        """The FAPI 2.0 profile's rules, in a domain under it (docs/fapi.md)."""
        problems = profile.configuration_problems(
            private_key_jwt=self["token_endpoint_auth_method"] == "private_key_jwt",
            grant_types=self["grant_types"],
            id_token_alg=self.get("id_token_signed_response_alg"),
        )
        if problems:
            raise invalid(" ".join(dict.fromkeys(problems.values())))

    def _scope(self) -> None:
        scope = _string(self, "scope", 2000) or "public"
        domain_scopes = self.params["scopes"]
        reserved = [s for s in scope.split() if s in RESERVED_SCOPES]
        if reserved:
            raise invalid(f"scope: {' '.join(reserved)} is granted only by a domain admin, never by registration.")
        try:
            self["scope"] = validation.scopes(scope, domain_scopes)
        except validation.Invalid as exc:
            raise invalid(f"scope: {exc}") from None

    def _client_name(self) -> None:
        name = _string(self, "client_name", 200)
        if name is not None:
            if not name.strip() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
                raise invalid("client_name must be non-empty text without control characters.")
            self["client_name"] = name.strip()


def _string(claims: dict, name: str, max_length: int) -> str | None:
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > max_length:
        raise invalid(f"{name} must be a string of at most {max_length} characters.")
    return value


def _list(claims: dict, name: str) -> list[str] | None:
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and 0 < len(v) <= 100 for v in value):
        raise invalid(f"{name} must be an array of strings.")
    return value


def _uris(claims: dict, name: str, error: type) -> list[str]:
    value = claims.get(name)
    if value is None:
        return []
    if (
        not isinstance(value, list)
        or len(value) > MAX_URIS
        or not all(isinstance(v, str) and 0 < len(v) <= MAX_URI_LENGTH for v in value)
    ):
        raise error(f"{name} must be an array of at most {MAX_URIS} URIs.")
    try:
        return list(dict.fromkeys(validation.redirect_uri(uri) for uri in value))
    except validation.Invalid as exc:
        raise error(_printable(f"{name}: {exc}")) from None


def outbound_url(url: str, name: str, allow_private: bool) -> str:
    """A URL the service will call for this client, by the admin path's rule (``validation.client_url``):
    https to a public address, unless the operator allows private networks (``allow_private``); the address is
    checked again on every call (authsvc.core.outbound)."""
    try:
        return validation.client_url(url, name, allow_private=allow_private)
    except validation.Invalid as exc:
        raise invalid(str(exc)) from None


def client_keys(jwks: Any, jwks_uri: str | None) -> tuple[dict | None, str | None]:
    """The client's public keys for private_key_jwt, by the admin path's rules (``client_authentication.client_jwks``:
    RSA of 2048 to 8192 bits or EC, public members only; a jwks_uri the service may call)."""
    if jwks_uri is not None:
        return None, outbound_url(jwks_uri, "jwks_uri", settings().client_jwks_allow_private_networks)
    try:
        return client_authentication.client_jwks(jwks), None
    except validation.Invalid as exc:
        raise invalid(f"jwks: {exc}") from None


def registration_policy(domain: Domain) -> dict[str, Any]:
    """What a client may register in ``domain`` (the claims' ``params``)."""
    return {"scopes": [s for s in domain.scope_list if s not in RESERVED_SCOPES], "fapi2": domain.fapi2}


def apply_metadata(application: Application, metadata: dict[str, Any], *, fapi2: bool = False) -> None:
    """Set the application's registered fields from checked metadata (a full replacement, RFC 7592 2.2);
    ``fapi2``: its domain is under the FAPI 2.0 profile."""
    grant_types = metadata["grant_types"]
    application.name = metadata.get("client_name") or application.client_id
    application.redirect_uris = metadata["redirect_uris"]
    application.grant_types = grant_types
    application.device = DEVICE_CODE_GRANT_TYPE in grant_types
    application.scopes = metadata["scope"]
    application.token_endpoint_auth_method = metadata["token_endpoint_auth_method"]
    if metadata["token_endpoint_auth_method"] == "none" or fapi2:
        # A public client proves nothing at the token endpoint: PKCE is its only protection (RFC 9700
        # 2.1.1), also when an RFC 7592 update turns a confidential registration into a public one.
        # Under the FAPI 2.0 profile every client uses PKCE (5.3.2.2 item 5).
        application.require_pkce = True
    application.jwks = metadata.get("jwks")
    application.jwks_uri = metadata.get("jwks_uri")
    application.post_logout_redirect_uris = metadata.get("post_logout_redirect_uris") or None
    application.backchannel_logout_uri = metadata.get("backchannel_logout_uri")
    application.id_token_signed_response_alg = metadata.get("id_token_signed_response_alg")
    application.dpop_bound_access_tokens = bool(metadata.get("dpop_bound_access_tokens"))
    application.require_pushed_authorization_requests = bool(metadata.get("require_pushed_authorization_requests"))


def declare_logo(application: Application, metadata: dict[str, Any]) -> None:
    """Keep the ``logo_uri`` the client registered (or drop it, on an update without one); after the flush."""
    uri = metadata.get("logo_uri")
    row = db.session.get(ApplicationLogo, application.id)
    if row is None:
        if uri is None:
            return
        row = ApplicationLogo(application_id=application.id)
        db.session.add(row)
    row.declared_uri = uri


def client_information(application: Application) -> dict[str, Any]:
    """The registered metadata of ``application`` (RFC 7591 3.2.1), without secrets."""
    info: dict[str, Any] = {
        "client_id": application.client_id,
        "client_id_issued_at": application.created_at,
        "client_name": application.name,
        "redirect_uris": list(application.redirect_uris),
        "grant_types": list(application.grant_types or []),
        "response_types": ["code"] if "authorization_code" in (application.grant_types or []) else [],
        "token_endpoint_auth_method": application.token_endpoint_auth_method,
        "scope": application.scopes,
    }
    if application.confidential:
        info["client_secret_expires_at"] = 0
    optional = {
        "jwks": application.jwks,
        "jwks_uri": application.jwks_uri,
        "post_logout_redirect_uris": application.post_logout_redirect_uris,
        "backchannel_logout_uri": application.backchannel_logout_uri,
        "id_token_signed_response_alg": application.id_token_signed_response_alg,
        "require_pushed_authorization_requests": application.require_pushed_authorization_requests,
        "logo_uri": db.session.scalar(
            select(ApplicationLogo.declared_uri).where(ApplicationLogo.application_id == application.id)
        ),
    }
    info.update({k: v for k, v in optional.items() if v})
    if application.dpop_bound_access_tokens:
        info["dpop_bound_access_tokens"] = True
    return info
