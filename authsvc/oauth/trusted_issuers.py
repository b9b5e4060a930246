"""JWTs of other issuers that a domain trusts: found by ``iss``, verified with keys fetched from their jwks_uri.

Token exchange (authsvc.oauth.token_exchange) reads subject and actor tokens
here, the JWT bearer grant (authsvc.oauth.id_jag) ID-JAGs. The keys are fetched
under authsvc.core.outbound's rules (the outbound deadline, https to public
addresses unless AUTHSVC_TRUSTED_ISSUER_ALLOW_PRIVATE_NETWORKS, a bounded body)
and kept in Redis for every worker for AUTHSVC_TRUSTED_ISSUER_JWKS_TTL; a token
naming an unknown ``kid`` refetches them at most once an interval, so that made-up
kids cannot make this service hammer the issuer. What cannot be verified is
``Refused``: each grant answers it in its own RFC's words.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import select

from authsvc.core import store, validation
from authsvc.core.database import db, now
from authsvc.core.models import Domain, TrustedIssuer, User
from authsvc.core.settings import settings
from authsvc.oauth import client_authentication

if TYPE_CHECKING:
    from joserfc.jwk import KeySet, KeySetSerialization

log = logging.getLogger(__name__)

ALGORITHMS = client_authentication.CLIENT_ASSERTION_ALGORITHMS
LEEWAY = 30  # seconds of clock skew allowed on exp, nbf and iat
_MAX_TOKEN = 16 * 1024


class Refused(Exception):
    """A token that cannot be taken: its words are the answer's error_description."""


@dataclass(frozen=True)
class Verified:
    """A trusted issuer's JWT, its signature and times checked."""

    issuer: TrustedIssuer
    header: dict[str, Any]
    claims: dict[str, Any]


def unverified_claims(token: str) -> dict[str, Any]:
    """The payload of a compact JWS, not verified: only to learn which issuer's keys verify it."""
    parts = token.split(".") if len(token) <= _MAX_TOKEN else []
    if len(parts) != 3:
        raise Refused("The token is not a JWT.")
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, RecursionError):
        raise Refused("The token is not a JWT.") from None
    if not isinstance(payload, dict):
        raise Refused("The token is not a JWT.")
    return payload


def find(domain: Domain, issuer: str) -> TrustedIssuer | None:
    """The domain's record of ``issuer`` (exact match), or None."""
    if not _storable(issuer):
        return None
    return db.session.scalar(
        select(TrustedIssuer).where(TrustedIssuer.domain_id == domain.id, TrustedIssuer.issuer == issuer)
    )


def verify(row: TrustedIssuer, token: str) -> Verified:
    """``token`` verified with ``row``'s keys: signature, ``iss``, ``exp`` (required), ``nbf`` and ``iat``."""
    from joserfc import jws, jwt
    from joserfc.errors import JoseError

    try:
        header = jws.extract_compact(token.encode()).protected
    except (JoseError, ValueError):
        raise Refused("The token is not a JWT.") from None
    kid, alg = header.get("kid"), header.get("alg")
    if alg not in ALGORITHMS:
        raise Refused("The token's alg is not an asymmetric signature algorithm.")
    keys = _key_set(row)
    if not _has_kid(keys, kid):
        fresh = _refetched_key_set(row)
        keys = fresh if fresh is not None else keys
    try:
        decoded = jwt.decode(token, keys, algorithms=[alg])
    except (JoseError, ValueError):
        raise Refused("The token's signature does not verify with the issuer's keys.") from None
    claims = decoded.claims
    at = now()
    exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
    if claims.get("iss") != row.issuer:
        raise Refused("The token's iss is not the issuer whose keys verify it.")
    if not isinstance(exp, int) or exp + LEEWAY <= at:
        raise Refused("The token has expired or has no exp.")
    if (isinstance(nbf, int) and nbf - LEEWAY > at) or (
        iat is not None and (not isinstance(iat, int) or iat - LEEWAY > at)
    ):
        raise Refused("The token is not valid yet.")
    return Verified(issuer=row, header=dict(decoded.header), claims=claims)


def user_of(domain: Domain, claims: dict[str, Any]) -> User | None:
    """The enabled user of ``domain`` a trusted issuer's token names: by its ``email``, else by a ``sub`` that is
    an e-mail address. Never created here (the JWT bearer grant creates one, ``email_to_create``)."""
    for name in ("email", "sub"):
        value = claims.get(name)
        if not isinstance(value, str) or "@" not in value or not _storable(value):
            continue
        try:
            email = validation.account_name(value)
        except validation.Invalid:
            continue
        user = db.session.scalar(select(User).where(User.domain_id == domain.id, User.email == email))
        if user is not None and not user.disabled:
            return user
        return None
    return None


def email_to_create(domain: Domain, claims: dict[str, Any]) -> str | None:
    """The address, in its stored form, of the user an ID-JAG may create: its ``email`` claim (never a ``sub``:
    an issuer's subject identifiers are its own), vouched for by the trusted issuer (``email_verified`` absent or
    JSON true; false or any value not a boolean, such as "false", 0 or null, is not), valid by the service's one
    e-mail rule, and no user's of ``domain`` yet. None otherwise."""
    value = claims.get("email")
    vouched = claims.get("email_verified", True) is True
    if not isinstance(value, str) or not vouched or not _storable(value):
        return None
    try:
        email = validation.email(value)
    except validation.Invalid:
        return None
    taken = db.session.scalar(select(User.id).where(User.domain_id == domain.id, User.email == email))
    return None if taken is not None else email


def _storable(value: str) -> bool:
    """Whether a claim may be compared in SQL: a token's claims are anyone's text (PostgreSQL refuses a NUL)."""
    return 0 < len(value) <= 2000 and "\x00" not in value


def _has_kid(keys: KeySet, kid: Any) -> bool:
    return kid is None or any(key.kid == kid for key in keys.keys)


def _owner(row: TrustedIssuer) -> str:
    return f"trusted-issuer-{row.id}"


def _key_set(row: TrustedIssuer) -> KeySet:
    uri = row.jwks_uri
    if uri is None:
        raise Refused("The issuer has no keys here.")
    document = store.load_jwks(_owner(row), uri)
    if document is None:
        document = fetch_jwks(uri)
        store.save_jwks(_owner(row), uri, document, settings().trusted_issuer_jwks_ttl)
    return _imported(document)


def _refetched_key_set(row: TrustedIssuer) -> KeySet | None:
    """The issuer's keys fetched anew, or None when another request did that within the interval."""
    if not store.claim_jwks_refetch(_owner(row), settings().trusted_issuer_jwks_refetch_interval):
        return None
    log.info("trusted issuer %s: unknown key in a token, refetching its JWKS", row.id)
    uri = cast(str, row.jwks_uri)  # _key_set refused an issuer without one
    document = fetch_jwks(uri)
    store.save_jwks(_owner(row), uri, document, settings().trusted_issuer_jwks_ttl)
    return _imported(document)


def _imported(document: dict[str, Any]) -> KeySet:
    from joserfc.jwk import KeySet

    return KeySet.import_key_set(cast("KeySetSerialization", document))


def fetch_jwks(url: str) -> dict[str, Any]:
    """The JWKS at ``url``: within the outbound deadline and destination rules, no larger than a client's JWKS,
    public RSA or EC keys only (authsvc.oauth.client_authentication's rule)."""
    import requests

    from authsvc.core import outbound

    config = settings()
    try:
        with outbound.guard(
            None,
            allow_private=config.trusted_issuer_allow_private_networks,
            seconds=config.outbound_deadline,
            max_bytes=client_authentication.JWKS_MAX_BYTES,
        ) as session:
            response = session.get(url, timeout=config.client_jwks_timeout, headers={"Accept": "application/json"})
            response.raise_for_status()
            body = response.content
    except requests.RequestException as exc:
        log.warning("trusted issuer jwks_uri %s could not be fetched: %s", url, type(exc).__name__)
        why = "refused by the destination rules" if outbound.refused(exc) else "unreachable, slow or failing"
        raise Refused(f"The issuer's keys could not be fetched ({why}).") from None
    try:
        return client_authentication.client_jwks(json.loads(body))
    except (ValueError, RecursionError):
        raise Refused("The issuer's jwks_uri does not serve a usable JWKS.") from None
