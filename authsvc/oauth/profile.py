"""The FAPI 2.0 Security Profile of a domain (``domains create|update --profile fapi2``; docs/fapi.md).

A domain whose ``profile`` is ``fapi2`` holds every application of it to the
FAPI 2.0 Security Profile (OpenID Foundation, Final, 2025). The rules sit here,
each refusal naming the rule and its section of docs/fapi.md:

- when an application is saved (admin API, console, CLI, dynamic registration)
  and when a domain is switched to the profile: ``configuration_problems``;
- on every request, whatever was saved before: ``check_client_request`` (the
  token, revocation, introspection and device endpoints), ``AuthorizationRequestRules``
  (the authorisation endpoint), ``code_ttl``, ``assertion_audiences``.

``requires_par`` and ``requires_dpop`` say what the pushed-request and DPoP
code asks of a client of such a domain.

What a domain issued before it switched to the profile does not outlive the
switch (docs/fapi.md#switching-a-domain): ``revoke_at_switch`` revokes its
tokens then, once, so that inspect's fast path and UserInfo need no rule of
their own; a code still in the store says whether it was issued under the
profile (``ISSUED_BEFORE_SWITCH`` refuses it at the exchange).
"""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc6749 import InvalidClientError, InvalidRequestError, UnauthorizedClientError
from flask import request as flask_request
from sqlalchemy import select

from authsvc.api.proofs import FAPI2_ALGORITHMS as DPOP_ALGORITHMS
from authsvc.core import audit
from authsvc.core.models import (
    DEVICE_CODE_GRANT_TYPE,
    JWT_BEARER_GRANT_TYPE,
    TOKEN_EXCHANGE_GRANT_TYPE,
    Application,
    Domain,
)
from authsvc.tokens import revocation

# FAPI 2.0 Security Profile 5.3.2.1 item 11.
MAX_CODE_TTL = 60
# 5.4.1: JWTs are signed with PS256, ES256 or EdDSA; of what the service verifies and signs, these.
ASSERTION_ALGORITHMS = ("PS256", "ES256")
ID_TOKEN_ALGORITHM = "ES256"


def fapi2(subject: Application | Domain | None) -> bool:
    """Whether ``subject`` (an application, through its domain, or a domain) is under the FAPI 2.0 profile."""
    if isinstance(subject, Application):
        subject = subject.domain
    return subject is not None and subject.fapi2


def requires_par(client: Application) -> bool:
    """Whether ``client`` must push its authorisation requests (RFC 9126; FAPI 2.0 5.3.2.2 item 3)."""
    return fapi2(client)


def requires_dpop(client: Application) -> bool:
    """Whether ``client``'s tokens must be DPoP-bound (RFC 9449; FAPI 2.0 5.3.2.1 items 4 and 5)."""
    return fapi2(client)


def rule(text: str, anchor: str) -> str:
    """A refusal's description: the rule, and where docs/fapi.md explains it."""
    return f"FAPI 2.0 profile: {text} (docs/fapi.md#{anchor})."


CONFIDENTIAL = rule(
    "an application must be confidential and authenticate with private_key_jwt", "client-authentication"
)
PKCE_REQUIRED = rule("PKCE with code_challenge_method S256 is required", "pkce")
NO_PLAIN = rule("PKCE method plain is not allowed; use S256", "pkce")
REDIRECT_URI_REQUIRED = rule("the request must name its redirect_uri", "authorization-requests")
NO_PASSWORD = rule("the password grant is not allowed", "grants")
NO_DEVICE = rule("the device authorization grant is not allowed", "grants")
NO_EXCHANGE = rule("token exchange and the JWT bearer grant are not allowed", "grants")
NO_QUERY = rule("parameters go in the request body, never in the query string", "no-secrets-in-urls")
ASSERTION_ALGORITHM = rule("a client assertion is signed with PS256 or ES256", "algorithms")
ID_TOKEN_RS256 = rule("ID tokens are signed with ES256", "algorithms")
PAR_REQUIRED = rule(
    "every authorization request is pushed: POST it to /auth/oauth/par and send only client_id and the "
    "request_uri it answers",
    "authorization-requests",
)
DPOP_REQUIRED = rule(
    "tokens are DPoP-bound: send a DPoP proof (RFC 9449) with every token request", "sender-constrained-tokens"
)
ASSERTION_AUDIENCE = rule("a client assertion's aud must be the issuer, as one string", "client-authentication")
ISSUED_BEFORE_SWITCH = rule(
    "a code issued before the domain switched to the profile is refused; authorise again", "switching-a-domain"
)


def configuration_problems(
    *,
    private_key_jwt: bool,
    require_pkce: bool | None = True,
    allow_plain_pkce: bool = False,
    grant_types: list[str] | None = None,
    device: bool = False,
    id_token_alg: str | None = None,
) -> dict[str, str]:
    """What the profile refuses in an application's settings, by field (empty when it complies).

    ``require_pkce`` None is the default, which a profile domain turns on.
    """
    problems: dict[str, str] = {}
    if not private_key_jwt:
        problems["token_endpoint_auth_method"] = CONFIDENTIAL
    if require_pkce is False:
        problems["require_pkce"] = PKCE_REQUIRED
    if allow_plain_pkce:
        problems["allow_plain_pkce"] = NO_PLAIN
    if device or DEVICE_CODE_GRANT_TYPE in (grant_types or []):
        problems["device"] = NO_DEVICE
    if "password" in (grant_types or []):
        problems["grant_types"] = NO_PASSWORD
    # None is the default, which is ES256 under the profile (id_token_algorithm).
    if id_token_alg not in (None, ID_TOKEN_ALGORITHM):
        problems["id_token_signed_response_alg"] = ID_TOKEN_RS256
    return problems


def application_problems(application: Application) -> dict[str, str]:
    """``configuration_problems`` of a saved application."""
    return configuration_problems(
        private_key_jwt=application.private_key_jwt,
        require_pkce=application.require_pkce,
        allow_plain_pkce=application.allow_plain_pkce,
        grant_types=application.grant_types,
        device=application.device,
        id_token_alg=application.id_token_signed_response_alg,
    )


def check_client_request(client: Application, request: Any, endpoint: str) -> None:
    """Refuse what the profile forbids in a request a client authenticated (token, revocation, introspection,
    device authorisation): another authentication method, parameters in the query string, a forbidden grant."""
    if not fapi2(client):
        return
    if not client.private_key_jwt:
        raise InvalidClientError(status_code=401, description=CONFIDENTIAL)
    if flask_request.args:
        raise InvalidRequestError(NO_QUERY)
    grant_type = request.payload.grant_type if endpoint == "token" else None
    if grant_type == "password":
        raise UnauthorizedClientError(NO_PASSWORD)
    if grant_type == DEVICE_CODE_GRANT_TYPE or endpoint == "device_authorization":
        raise UnauthorizedClientError(NO_DEVICE)
    if grant_type in (TOKEN_EXCHANGE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE):
        raise UnauthorizedClientError(NO_EXCHANGE)


class AuthorizationRequestRules:
    """Authlib grant extension: the profile's rules for an authorisation request, once its client and
    redirect URI are known (so that a refusal goes back to the client, with ``iss``, RFC 9207)."""

    def __call__(self, grant: Any) -> None:
        grant.register_hook("after_validate_authorization_request_payload", self.validate)

    def validate(self, grant: Any, redirect_uri: str) -> None:
        client: Application = grant.request.client
        if not fapi2(client):
            return
        if not client.private_key_jwt:
            raise UnauthorizedClientError(CONFIDENTIAL)
        data = grant.request.payload.data
        # 5.3.2.2 item 6: no registered redirect URI stands in for an omitted one.
        if not data.get("redirect_uri"):
            raise InvalidRequestError(REDIRECT_URI_REQUIRED)
        method = data.get("code_challenge_method")
        if method == "plain":
            raise InvalidRequestError(NO_PLAIN)
        # An omitted method is plain (RFC 7636 4.3): S256 must be named.
        if not data.get("code_challenge") or method != "S256":
            raise InvalidRequestError(PKCE_REQUIRED)


def narrow_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """A profile domain's RFC 8414 document: only what its clients may use (FAPI 2.0 5.3.2.1 item 1)."""
    refused = {"password", DEVICE_CODE_GRANT_TYPE, TOKEN_EXCHANGE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE}
    metadata["grant_types_supported"] = [g for g in metadata["grant_types_supported"] if g not in refused]
    metadata.pop("device_authorization_endpoint", None)
    metadata["code_challenge_methods_supported"] = ["S256"]
    for endpoint in ("token", "revocation", "introspection"):
        metadata[f"{endpoint}_endpoint_auth_methods_supported"] = ["private_key_jwt"]
    # RFC 9126 5: every authorisation request is pushed.
    metadata["require_pushed_authorization_requests"] = True
    # 5.4.1: DPoP proofs are signed with PS256, ES256 or EdDSA (RFC 9449 5.1's list).
    metadata["dpop_signing_alg_values_supported"] = list(DPOP_ALGORITHMS)
    return metadata


def id_token_algorithm(client: Application, default: str) -> str:
    """How ``client``'s ID tokens are signed: its choice, else ``default``; ES256 under the profile."""
    return ID_TOKEN_ALGORITHM if fapi2(client) else client.id_token_signed_response_alg or default


def code_ttl(client: Application, configured: int) -> int:
    """Seconds an authorisation code of ``client`` lives: AUTHSVC_CODE_TTL, at most 60 under the profile."""
    return min(configured, MAX_CODE_TTL) if fapi2(client) else configured


def revoke_at_switch(domain: Domain, actor: str) -> int:
    """Revoke what ``domain``'s applications hold that the profile would not have issued, as the domain switches
    to it; return how many tokens were live. The caller commits, with the audit record.

    Every token not DPoP-bound, and every token of a grant other than client credentials: a user's
    authorisation was never held to the profile (not pushed, perhaps without PKCE S256) and its refresh token
    would carry it on; the password and device grants are refused under it. A DPoP-bound client-credentials
    token of a private_key_jwt client (every application complies by now) is what the profile issues
    itself: it stays.
    """
    applications = select(Application.id).where(Application.domain_id == domain.id)
    revoked = revocation.revoke_unbound_of(applications)
    if revoked:
        details = {"count": revoked, "via": "fapi2_profile"}
        audit.record("token.revoked", domain_id=domain.id, actor=actor, details=details, commit=False)
    return revoked
