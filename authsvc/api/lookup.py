"""Credential lookup for API requests: bearer tokens, DPoP-bound tokens and API keys.

RFC 6750 2.1-2.3 places for a bearer token (header, query, cookie; the last as
docs/platform.md#inspect asks); API keys in ``X-API-Key``, ``api-key`` query or cookie.
A token bound to a DPoP key (RFC 9449 7) counts only as ``Authorization: DPoP <token>``
with a proof by that key for this request; anywhere else it is refused.
Nothing is cached: a revoked credential fails on its next use, on every worker.
"""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc6750 import InvalidTokenError
from flask import request

from authsvc.api import proofs
from authsvc.api.credentials import Credential, find_api_key, find_token, note_use, use_to_note
from authsvc.api.protected_resource import meant_for_this_service
from authsvc.core.errors import ApiError
from authsvc.core.models import (
    FAPI2_PROFILE,
    Domain,
    Token,
)
from authsvc.core.tenancy import current_domain, request_domain_parameters, request_host
from authsvc.tokens import lookups


def _invalid(description: str) -> InvalidTokenError:
    return InvalidTokenError(description=description, realm="authsvc")


def _presented_token() -> tuple[str, str] | None:
    """The token the request presents, with its scheme: ``("bearer" | "dpop", token)``; None without one."""
    header = request.headers.get("Authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() not in ("bearer", "dpop") or not value.strip():
            raise _invalid("The Authorization header is not 'Bearer <token>' or 'DPoP <token>'.")
        return scheme.lower(), value.strip()
    elsewhere = request.args.get("bearer_token") or request.cookies.get("bearer_token")
    return ("bearer", elsewhere) if elsewhere else None


def check_binding(dpop_jkt: str | None, scheme: str, token: str, *, nonce: bool = False, fapi2: bool = False) -> None:
    """RFC 9449 7: a token bound to the key ``dpop_jkt`` needs the DPoP scheme and a proof by that key for this
    request (``ath`` its hash); an unbound one is a bearer token. ``nonce``: the endpoint requires server nonces;
    ``fapi2``: the token's domain is under the FAPI 2.0 profile (its proof algorithms only)."""
    if dpop_jkt is None:
        if scheme == "dpop":
            raise _invalid("This access token is not bound to a DPoP key: present it as 'Bearer <token>'.")
        return
    if scheme != "dpop":
        # Not as Bearer, and never from a query string or a cookie: a stolen copy is not enough.
        raise proofs.DPoPError(
            "invalid_token",
            "This access token is bound to a DPoP key: present it as 'Authorization: DPoP <token>' with a DPoP proof.",
            resource=True,
            fapi2=fapi2,
        )
    if proofs.request_proof(access_token=token, jkt=dpop_jkt, resource=True, nonce=nonce, fapi2=fapi2) is None:
        raise proofs.DPoPError("invalid_dpop_proof", "Send a DPoP proof with a DPoP-bound token.", resource=True)


def _presented_api_key() -> str | None:
    return request.headers.get("X-API-Key") or request.args.get("api-key") or request.cookies.get("api-key")


def presented() -> bool:
    """Whether the request carries a bearer token or an API key (valid or not).

    A ``Basic`` Authorization header is a client's, not a user credential.
    """
    header = request.headers.get("Authorization", "")
    if header and not header.lower().startswith("basic "):
        return True
    return bool(request.args.get("bearer_token") or request.cookies.get("bearer_token") or _presented_api_key())


def presented_token(domain: Domain) -> Token | None:
    """The live access token of ``domain`` presented with the request, if any; no error otherwise.

    A DPoP-bound token counts only with the DPoP scheme and a valid proof by its key.
    """
    try:
        presented = _presented_token()
    except InvalidTokenError:
        return None
    if presented is None:
        return None
    scheme, value = presented
    token = lookups.access_token(value)
    if token is None or not token.is_active() or token.application.domain_id != domain.id:
        return None
    try:
        check_binding(token.dpop_jkt, scheme, value, fapi2=domain.fapi2)
    except (InvalidTokenError, proofs.DPoPError):
        return None
    return token


def authenticate(domain: Domain | None = None, *, dpop_nonce: bool = False, any_audience: bool = False) -> Credential:
    """The credential presented with the request, valid for its domain; else InvalidTokenError (401).

    ``domain``: the request's, when the caller has it already. Without it (inspect)
    the domain is matched by the request's host in the credential's own statement,
    which saves a round trip; an unknown host is still a 404.
    ``dpop_nonce``: a DPoP proof must carry the server's nonce (UserInfo; RFC 9449 9).
    A token issued for other resources (RFC 8707) is refused: it is not meant for this service (RFC 9068 4),
    unless ``any_audience`` (inspect and UserInfo answer about any token of the domain).
    """
    if domain is not None:
        host, default_host = domain.host, None
    else:
        host, default_host = request_host(), request_domain_parameters()["default_host"]
    try:
        presented = _presented_token()
    except InvalidTokenError:
        if domain is None:
            current_domain()  # an unknown host is a 404 whatever the header
        raise
    if presented:
        scheme, value = presented
        credential = find_token(value, host, default_host)
        if credential is None:
            raise _refuse(domain, "The access token is invalid, expired or revoked.")
        if not any_audience and not meant_for_this_service(credential.resources):
            raise _invalid("The access token was issued for another resource (aud), not for this service.")
        # Where it came from first: a FAPI 2.0 domain's token in the query is refused for that (400), bound or not.
        _require_header(credential, "Authorization")
        check_binding(credential.dpop_jkt, scheme, value, nonce=dpop_nonce, fapi2=credential.profile == FAPI2_PROFILE)
        return credential
    api_key = _presented_api_key()
    if api_key:
        credential = find_api_key(api_key, host, default_host)
        if credential is None:
            raise _refuse(domain, "The API key is invalid, expired or revoked.")
        _require_header(credential, "X-API-Key")
        if use_to_note(credential):
            note_use(credential)
        return credential
    if domain is None:
        current_domain()
    # RFC 6750 3.1: a request with no credential gets no error code in the challenge.
    raise ApiError(
        401,
        "invalid_token",
        "No bearer token or API key was presented.",
        headers={"WWW-Authenticate": 'Bearer realm="authsvc"'},
    )


# The FAPI 2.0 profile's rule (5.3.4: no access token in the query string), decided by the credential's
# own domain; authsvc.oauth.profile has the profile's other rules.
HEADER_ONLY = (
    "FAPI 2.0 profile: credentials are accepted in a header only, never in the query string or a cookie "
    "(docs/fapi.md#no-secrets-in-urls)."
)


def _require_header(credential: Credential, header: str) -> None:
    """Refuse a credential of a FAPI 2.0 domain that came in the query string or a cookie: 400
    ``invalid_request`` (RFC 6750 3.1), though the credential is valid."""
    if credential.profile == FAPI2_PROFILE and not request.headers.get(header):
        raise ApiError(
            400,
            "invalid_request",
            HEADER_ONLY,
            headers={"WWW-Authenticate": 'Bearer realm="authsvc", error="invalid_request"'},
        )


def require_scopes(credential: Credential, *needed: str) -> None:
    """Refuse a credential that lacks any of the ``needed`` scopes: 403 ``insufficient_scope`` (RFC 6750 3.1).

    A token or API key acts only within its scopes, whatever its user may do:
    an admin's token granted ``public`` is no admin credential.
    """
    if set(needed) <= set(credential.scopes):
        return
    scope = " ".join(needed)
    raise ApiError(
        403,
        "insufficient_scope",
        f"This needs a token or API key with the scope '{scope}'.",
        headers={"WWW-Authenticate": f'Bearer realm="authsvc", error="insufficient_scope", scope="{scope}"'},
        extra={"scope": scope},
    )


def _refuse(domain: Domain | None, description: str) -> InvalidTokenError:
    # No row: an unknown host is told apart (404) only now, off the path of valid credentials.
    if domain is None:
        current_domain()
    return _invalid(description)


def claims(credential: Credential, issuer: str) -> dict[str, Any]:
    """What inspect answers about ``credential``: the claims shape PlaceOS clients read."""
    user = credential.claimant
    answer: dict[str, Any] = {
        "iss": issuer,
        "iat": credential.issued_at,
        "exp": credential.expires_at,
        "aud": credential.audience,
        "sub": str(user.id),
        "scope": credential.scopes,
        "u": {"n": user.name, "e": user.email, "p": int(credential.permissions), "r": list(user.groups)},
    }
    if credential.kind == "token":
        answer["client_id"] = credential.client_id
        if credential.dpop_jkt:
            # RFC 9449 6.1: an API server checks that a proof made for its own URL is by this key.
            answer["cnf"] = {"jkt": credential.dpop_jkt}
        if credential.act:
            answer["act"] = credential.act  # RFC 8693 4.1: who acts for the subject
    else:
        answer["api_key"] = credential.api_key_id
    return answer
