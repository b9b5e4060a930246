"""JWT access tokens (RFC 9068), for applications whose ``access_token_format`` is ``jwt``.

The token is signed with the domain's current key (the one its ID tokens use,
published at /auth/oauth/jwks) and says what the opaque token's row says. It
stays a credential of this service: only its digest is stored, like an opaque
token's, so inspect, introspection and UserInfo find it by that digest and a
revoked one is refused at once. Refresh tokens stay opaque.
"""

from __future__ import annotations

import secrets
from typing import Any

from authsvc.api import credentials
from authsvc.auth.mfa import factors
from authsvc.core.models import Application, Domain, User
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import keys, profile
from authsvc.oauth.parameters import MergedRequest, grant_state
from authsvc.tokens.issue import stored

TYP = "at+jwt"  # RFC 9068 2.1


def claims(
    *,
    issuer: str,
    audience: str | list[str],
    subject: str,
    client_id: str,
    scope: str,
    issued_at: int,
    expires_at: int,
    jti: str,
    auth_time: int | None = None,
    acr: str | None = None,
    jkt: str | None = None,
    act: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An access token's claims (RFC 9068 2.2). ``jkt``: the thumbprint of the key a sender-constrained token is
    bound to (RFC 9449 6.1, ``cnf.jkt``); ``auth_time`` and ``acr`` only when the sign-in behind it is known."""
    token: dict[str, Any] = {
        "iss": issuer,
        "exp": expires_at,
        "aud": audience,
        "sub": subject,
        "client_id": client_id,
        "iat": issued_at,
        "jti": jti,
        "scope": scope,
    }
    if auth_time is not None:
        token["auth_time"] = auth_time
    if acr is not None:
        token["acr"] = acr
    if jkt is not None:
        token["cnf"] = {"jkt": jkt}
    if act is not None:
        token["act"] = act  # RFC 8693 4.1
    return token


def subject(client: Application, user: User | None, grant_type: str) -> str:
    """RFC 9068 2.2: the resource owner; the client itself for client credentials (no resource owner)."""
    if grant_type == "client_credentials" or user is None:
        return client.client_id
    return str(user.id)


def acr_of(amr: list[str] | None) -> str | None:
    """The sign-in's ``acr`` as ID tokens state it: ``mfa`` after a second factor, else none."""
    return factors.MFA_ACR if "mfa" in (amr or []) else None


def new_jti() -> str:
    return secrets.token_urlsafe(16)


def encode(domain: Domain, client: Application, token_claims: dict[str, Any]) -> str:
    """The signed token: the domain's current key of the application's ID token algorithm (ES256 in a FAPI 2.0
    domain, docs/fapi.md#algorithms), ``typ: at+jwt``."""
    alg = profile.id_token_algorithm(client, keys.DEFAULT_ALGORITHM)
    key = keys.request_key(domain, alg)
    header = {"alg": alg, "kid": key.kid, "typ": TYP}
    from joserfc import jwt  # loaded by keys.private_key already

    return jwt.encode(header, token_claims, key, algorithms=[alg])


def issue(request: MergedRequest, token: dict[str, Any], jkt: str | None = None) -> str:
    """The JWT for the token response ``token`` of ``request`` (its client, user, grant and audience)."""
    client: Application = request.client
    domain = current_domain()
    # The sign-in behind the grant: the code's, or the refreshed token's (carried from its code).
    state = grant_state()
    lineage = state.lineage
    issued = token["created_at"]
    token_claims = claims(
        issuer=issuer(),
        audience=credentials.audience_claim(stored(state.audience), domain.host),
        subject=subject(client, request.user, request.payload.grant_type),
        client_id=client.client_id,
        scope=token["scope"],
        issued_at=issued,
        expires_at=issued + token["expires_in"],
        jti=new_jti(),
        auth_time=lineage.auth_time,
        acr=acr_of(lineage.amr),
        jkt=jkt,
        act=state.act,
    )
    return encode(domain, client, token_claims)
