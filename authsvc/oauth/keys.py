"""The domain's signing keys: made on first need, kept encrypted, rotated, published as a JWKS.

ID tokens and logout tokens are signed with the domain's current key of their
algorithm; every JWS names its key (``kid``). A rotated-out key stays in the
JWKS until every ID token it signed has expired (AUTHSVC_ID_TOKEN_TTL).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast, get_args

from flask import current_app
from joserfc.errors import JoseError
from sqlalchemy.exc import IntegrityError

from authsvc.core import audit, security
from authsvc.core.database import db, now
from authsvc.core.models import Domain, SigningKey
from authsvc.core.models.keys import CURRENT_KID
from authsvc.core.readers.pool import read_one
from authsvc.core.request_state import part
from authsvc.core.settings import settings

if TYPE_CHECKING:
    from joserfc.jwk import ECKey, KeyParameters, KeySet, KeySetSerialization, RSAKey

    PrivateKey = RSAKey | ECKey

Algorithm = Literal["RS256", "ES256"]
ALGORITHMS: tuple[Algorithm, ...] = get_args(Algorithm)
DEFAULT_ALGORITHM: Algorithm = "RS256"  # OpenID Connect Core 15.1: every provider supports it
# The typ of our ID tokens (RFC 7519 5.1): what tells them from the other JWTs signed with the same keys.
ID_TOKEN_TYPE = "JWT"
EXTENSION = "authsvc.signing_keys"
# Parsed private keys a worker keeps, the most recently used: a worker of a service with ten thousand
# domains would otherwise keep every key it ever signed with (docs/performance.md, "Ten thousand domains").
PARSED_KEYS_MAX = 64
# joserfc's keys and JWTs load cryptography (about 10 MB), which a worker serving opaque
# tokens never needs: imported where a key is first used (docs/performance.md, "Memory").


def _generate(alg: str) -> PrivateKey:
    from joserfc.jwk import ECKey, RSAKey

    parameters: KeyParameters = {"alg": alg, "use": "sig"}
    if alg == "ES256":
        return ECKey.generate_key("P-256", parameters=parameters, private=True, auto_kid=True)
    return RSAKey.generate_key(2048, parameters=parameters, private=True, auto_kid=True)


def _new_row(domain: Domain, alg: str) -> SigningKey:
    key = _generate(alg)
    return SigningKey(
        domain_id=domain.id,
        kid=key.kid,
        alg=alg,
        private_key_encrypted=security.encrypt(key.as_pem(private=True).decode("ascii")),
        public_jwk=key.as_dict(private=False),
        created_at=now(),
    )


def current_key(domain: Domain, alg: str = DEFAULT_ALGORITHM) -> SigningKey:
    """The domain's current key of ``alg``, made and committed on first need (call it with nothing pending)."""
    row = SigningKey.current(domain.id, alg)
    if row is not None:
        return row
    row = _new_row(domain, alg)
    db.session.add(row)
    try:
        db.session.commit()
    except IntegrityError:
        # Another worker made it first (one current key per domain and algorithm): use that one.
        db.session.rollback()
        row = SigningKey.current(domain.id, alg)
        if row is None:
            raise
    return row


@dataclass
class RequestKeys:
    """The signing keys a request has read (authsvc.core.request_state.part), by domain id and algorithm."""

    by_domain_and_alg: dict[tuple[int, str], PrivateKey] = field(default_factory=dict)


def request_key(domain: Domain, alg: str = DEFAULT_ALGORITHM) -> PrivateKey:
    """The private key of the domain's current key of ``alg``, read once per request: an access token and an
    ID token of one response share it. The current ``kid`` is read per request (a key rotated by any worker
    signs from the next response on); the key itself, decrypted and parsed, is kept per process by ``kid``,
    so only that one column is read unless this process has not seen the key yet."""
    memo = part(RequestKeys).by_domain_and_alg
    key: PrivateKey | None = memo.get((domain.id, alg))
    if key is None:
        # On a reader (a request with no transaction of its own writes its token in autocommit afterwards).
        row = read_one(CURRENT_KID, {"domain_id": str(domain.id), "alg": alg})
        kid = None if row is None else row.kid
        cache = _parsed_keys()
        key = cache.get(kid) if kid is not None else None
        if kid is not None and key is not None:
            cache.move_to_end(kid)
        else:
            # The key is new to this process, or was let go (or the domain has none yet: made and committed now).
            key = private_key(current_key(domain, alg))
        memo[domain.id, alg] = key
    return key


def _parsed_keys() -> OrderedDict[str, PrivateKey]:
    """This process's parsed keys by ``kid``, least recently used first."""
    return current_app.extensions.setdefault(EXTENSION, OrderedDict())


def private_key(row: SigningKey) -> PrivateKey:
    """The decrypted key of ``row``, kept per process by ``kid`` (decrypting and parsing costs ms), at most
    ``PARSED_KEYS_MAX`` of them: the least recently used goes first."""
    cache = _parsed_keys()
    key = cache.get(row.kid)
    if key is not None:
        cache.move_to_end(row.kid)
    else:
        pem = security.decrypt(row.private_key_encrypted)
        from joserfc.jwk import ECKey, RSAKey

        key_class = ECKey if row.alg == "ES256" else RSAKey
        # The PEM holds no kid or alg: they come from the row.
        key = key_class.import_key(pem, parameters={"kid": row.kid, "alg": row.alg, "use": "sig"})
        cache[row.kid] = key
        if len(cache) > PARSED_KEYS_MAX:
            cache.popitem(last=False)
    return key


def signing_key(domain: Domain, alg: str = DEFAULT_ALGORITHM) -> PrivateKey:
    """The private key that signs the domain's tokens of ``alg`` now."""
    return private_key(current_key(domain, alg))


def sign(domain: Domain, claims: dict[str, Any], alg: str = DEFAULT_ALGORITHM, typ: str = "JWT") -> str:
    """A JWS of ``claims`` with the domain's current key of ``alg``; its header names the key (``kid``)."""
    from joserfc import jwt

    key = signing_key(domain, alg)
    return jwt.encode({"alg": alg, "kid": key.kid, "typ": typ}, claims, key, algorithms=[alg])


def published(domain: Domain) -> list[SigningKey]:
    """The keys a token of the domain may still be signed with: current and not yet expired previous ones."""
    at = now()
    return [row for row in SigningKey.of_domain(domain.id) if row.state(at) != "expired"]


def public_jwks(domain: Domain) -> dict[str, Any]:
    """The JWKS document: public parts only (no ``d``, ``p``, ``q``...), newest key first."""
    keys = published(domain)
    if not any(row.alg == DEFAULT_ALGORITHM and row.retired_at is None for row in keys):
        # Made now, so that a relying party never caches an empty set.
        keys.insert(0, current_key(domain, DEFAULT_ALGORITHM))
    return {"keys": [row.public_jwk for row in keys]}


def public_key_set(domain: Domain) -> KeySet:
    """The domain's published keys, to verify its own tokens (an ``id_token_hint``)."""
    from joserfc.jwk import KeySet

    return KeySet.import_key_set(cast("KeySetSerialization", public_jwks(domain)))


def own_id_token_claims(domain: Domain, token: str, issuer: str) -> dict[str, Any] | None:
    """The claims of an ID token ``domain`` issued, expired or not (an ``id_token_hint``); None for any other.

    Only the domain's own published keys verify it: a token of another domain
    names a ``kid`` unknown here. Authorisation requests and RP-initiated logout
    read their hints here.
    """
    from joserfc import jwt

    try:
        decoded = jwt.decode(token, public_key_set(domain), algorithms=list(ALGORITHMS))
    except (JoseError, ValueError):
        return None
    claims, sub = decoded.claims, decoded.claims.get("sub")
    if claims.get("iss") != issuer or not isinstance(sub, str) or not sub:
        return None
    # Every JWT of the domain is signed with the same keys and names a subject: an access token (RFC 9068,
    # at+jwt), which any resource server holds, a Logout Token (logout+jwt)... Our ID tokens say typ JWT
    # (authsvc.oauth.id_tokens); nothing else is one.
    if decoded.header.get("typ", ID_TOKEN_TYPE) != ID_TOKEN_TYPE or "events" in claims:
        return None
    return claims


def rotate(domain: Domain, alg: str, actor: str) -> SigningKey:
    """Make a new current key of ``alg``; the old one stays published until its tokens expire."""
    at = now()
    old = SigningKey.current(domain.id, alg)
    if old is not None:
        old.retired_at = at
        old.retire_after = at + settings().id_token_ttl
        db.session.flush()  # the old key is no longer current before the new one is
    row = _new_row(domain, alg)
    db.session.add(row)
    db.session.flush()
    audit.record(
        "signing_key.rotated",
        domain_id=domain.id,
        actor=actor,
        target=f"signing_key:{row.kid}",
        details={"alg": alg, "previous": old.kid if old else None},
        commit=False,
    )
    db.session.commit()
    return row


class KeyState(TypedDict):
    """A key as the admin API and the command line show it (authsvc.admin.schemas.signing_keys.SigningKey)."""

    kid: str
    alg: str
    state: str
    created_at: int
    retire_after: int | None


def key_states(domain: Domain) -> list[KeyState]:
    """Every key of the domain with its state (current, previous, expired), newest first."""
    at = now()
    return [key_state(row, at) for row in SigningKey.of_domain(domain.id)]


def key_state(row: SigningKey, at: int) -> KeyState:
    """A key as the admin API shows it: never its private part."""
    return KeyState(
        kid=row.kid, alg=row.alg, state=row.state(at), created_at=row.created_at, retire_after=row.retire_after
    )
