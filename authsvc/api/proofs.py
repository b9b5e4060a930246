"""DPoP proofs (RFC 9449 4): checking one, the key's thumbprint, server nonces and single-use ``jti``.

A proof is a JWT the client signs with a key of its own for one HTTP request
(``htm``, ``htu``; ``ath`` when it carries an access token). It names its
public key in the ``jwk`` header; a token bound to that key states the key's
RFC 7638 thumbprint (``cnf.jkt``). The token endpoint (authsvc.oauth.dpop)
and the resource side (authsvc.api.lookup) check proofs here.

Replays: each ``jti`` is accepted once per target URI within the window a
proof is accepted in (a SET NX in Redis, shared by every worker). Nonces
(RFC 9449 8, 9; ``AUTHSVC_DPOP_NONCE``): a nonce is made per window of
``AUTHSVC_DPOP_NONCE_LIFETIME`` seconds, in Redis so that every instance
gives and accepts the same ones; the current and the previous window's are
accepted. The ``jti`` claim and the nonces are one round trip.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from authlib.oauth2 import OAuth2Error
from flask import request as flask_request
from joserfc.errors import JoseError, UnsupportedAlgorithmError
from werkzeug.wrappers import Response

from authsvc.core import clock, security, signed_json, store
from authsvc.core.request_state import part
from authsvc.core.settings import settings
from authsvc.core.tenancy import request_host

if TYPE_CHECKING:
    from joserfc import jws
    from joserfc.jwk import ECKey, OKPKey, RSAKey

# RFC 9449 4.2: asymmetric algorithms only. EdDSA (RFC 8037) and its RFC 9864 name Ed25519.
ALGORITHMS = ("ES256", "RS256", "PS256", "EdDSA", "Ed25519")
# A FAPI 2.0 domain's (5.4.1: PS256, ES256 or EdDSA; Ed25519 is RFC 9864's name for EdDSA with Ed25519).
FAPI2_ALGORITHMS = ("ES256", "PS256", "EdDSA", "Ed25519")
# The profile's rule (authsvc.oauth.profile has the others; this layer cannot import it).
FAPI2_ALGORITHM_RULE = (
    "FAPI 2.0 profile: a DPoP proof is signed with ES256, PS256 or EdDSA, not {alg} (docs/fapi.md#algorithms)."
)
PROOF_TYPE = "dpop+jwt"
# A proof is a few hundred bytes; one with the jwk of an RSA key of 8192 bits is under 4 KB.
MAX_PROOF_BYTES = 8192
MAX_JTI_LENGTH = 200
# Seconds a proof's iat may be ahead of this server's clock.
CLOCK_SKEW = 30
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_KEY_TYPES = {"ES256": "EC", "RS256": "RSA", "PS256": "RSA", "EdDSA": "OKP", "Ed25519": "OKP"}
_MIN_RSA_BITS = 2048
_MAX_RSA_BITS = 8192


# Where a request keeps the nonce to give the client next.
@dataclass
class NextNonce:
    """The nonce a request's answer gives the client for its next proof (authsvc.core.request_state.part)."""

    value: str | None = None


# joserfc refuses a protected header over 512 bytes, and the jwk of an RSA key of 2048 bits
# already makes one over 500 (4096 bits: about 1 KB). A proof's header carries its key, so the
# limits fit the largest key accepted; the proof's whole size is bounded first (MAX_PROOF_BYTES).
# Made at the first proof: joserfc's keys load cryptography (about 10 MB), which a worker
# serving bearer tokens never needs (docs/performance.md, "Memory").
@functools.cache
def _registry() -> jws.JWSRegistry:
    from joserfc.jws import JWSRegistry

    class _ProofRegistry(JWSRegistry):
        max_header_length = 4096
        max_payload_length = 2048
        max_signature_length = 2048  # RSA 8192: 1366 characters

        def get_alg(self, name: str) -> Any:
            # joserfc warns on each use of "EdDSA", which RFC 9864 deprecates for "Ed25519"; clients still send it.
            if name not in ALGORITHMS:
                raise UnsupportedAlgorithmError(f"Algorithm of '{name}' is not allowed")
            return self.algorithms[name]

    return _ProofRegistry(algorithms=list(ALGORITHMS), strict_check_header=False)


class DPoPError(OAuth2Error):  # type: ignore[misc]  # Authlib has no type hints
    """A refused proof: ``invalid_dpop_proof``, or ``use_dpop_nonce`` with the nonce to use (RFC 9449 7.1, 8, 9).

    At the token endpoint a 400 with a JSON body; at a resource (``resource=True``)
    a 401 with a ``WWW-Authenticate: DPoP`` challenge.
    """

    def __init__(
        self, error: str, description: str, *, nonce: str | None = None, resource: bool = False, fapi2: bool = False
    ):
        super().__init__(description=description, status_code=401 if resource else 400)
        self.error = error
        self.nonce = nonce
        self.resource = resource
        self.fapi2 = fapi2

    def get_headers(self) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = list(super().get_headers())
        if self.nonce:
            headers.append(("DPoP-Nonce", self.nonce))
        if self.resource:
            headers.append(("WWW-Authenticate", challenge(self.error, self.description, fapi2=self.fapi2)))
        return headers


def challenge(error: str | None = None, description: str | None = None, *, fapi2: bool = False) -> str:
    """A ``WWW-Authenticate: DPoP`` challenge (RFC 9449 7.1), naming the algorithms accepted."""
    algorithms = FAPI2_ALGORITHMS if fapi2 else ALGORITHMS
    parts = ['DPoP realm="authsvc"']
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append(f'error_description="{description}"')
    parts.append(f'algs="{" ".join(algorithms)}"')
    return ", ".join(parts)


@dataclass(frozen=True)
class Proof:
    """A proof that passed every check: the thumbprint of its key, the nonce to give the client next, its alg."""

    jkt: str
    next_nonce: str | None = None
    alg: str | None = None


def thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK, base64url without padding (``cnf.jkt``)."""
    from joserfc.jwk import import_key

    return import_key(jwk).thumbprint()


def access_token_hash(access_token: str) -> str:
    """``ath`` (RFC 9449 4.2): base64url of the SHA-256 of the token's ASCII, without padding."""
    digest = hashlib.sha256(access_token.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def normalised_uri(uri: str) -> str:
    """``uri`` without query and fragment, scheme and host in lower case, default ports left out (RFC 9449 4.3)."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return ""
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    if port is not None and (scheme, port) not in (("https", 443), ("http", 80)):
        host = f"{host}:{port}"
    return f"{scheme}://{host}{parts.path or '/'}"


def verify(
    proof: str,
    method: str,
    uri: str,
    *,
    access_token: str | None = None,
    jkt: str | None = None,
    nonce: bool = False,
    resource: bool = False,
    fapi2: bool = False,
) -> Proof:
    """Check ``proof`` for a request of ``method`` to ``uri`` (RFC 9449 4.3); DPoPError when it fails.

    ``access_token``: the token the request presents, whose hash ``ath`` must be;
    ``jkt``: the thumbprint of the key that token is bound to, which must be the proof's.
    ``nonce``: whether a server nonce is required (when AUTHSVC_DPOP_NONCE is on).
    ``fapi2``: the request is to a FAPI 2.0 domain, whose proofs use FAPI2_ALGORITHMS only.
    Every check comes before the jti is spent, but the nonce's (which shares its round trip).
    """

    def refuse(description: str) -> DPoPError:
        return DPoPError("invalid_dpop_proof", description, resource=resource, fapi2=fapi2)

    key, claims, key_alg = _signed_by_its_jwk(proof, refuse, FAPI2_ALGORITHMS if fapi2 else ALGORITHMS)
    jti, target = _check_claims(claims, method, uri, access_token, refuse)
    lifetime = settings().dpop_proof_lifetime
    thumbprint = key.thumbprint()
    if jkt is not None and thumbprint != jkt:
        raise refuse("The DPoP proof is not made with the key the token is bound to.")
    # Kept as long as a proof with this iat could still be accepted.
    first_use, current, accepted = _claim_jti(
        f"{target} {jti}",
        lifetime + CLOCK_SKEW + 1,
        settings().dpop_nonce_lifetime if nonce else None,
    )
    if nonce and (not isinstance(claims.get("nonce"), str) or claims["nonce"] not in accepted):
        raise DPoPError(
            "use_dpop_nonce",
            "The DPoP proof must carry the server's nonce: use the DPoP-Nonce header's value.",
            nonce=current,
            resource=resource,
            fapi2=fapi2,
        )
    if not first_use:
        raise refuse("The DPoP proof was used before (its jti): make a new proof for each request.")
    return Proof(jkt=thumbprint, next_nonce=current, alg=key_alg)


def _signed_by_its_jwk(
    proof: str, refuse: Callable[[str], DPoPError], algorithms: tuple[str, ...]
) -> tuple[Any, dict[str, Any], str]:
    """The proof's public key, claims and alg, once its form, typ, alg (one of ``algorithms``) and signature are
    checked."""
    if len(proof) > MAX_PROOF_BYTES or not proof.isascii():
        raise refuse(f"The DPoP proof must be a JWT of at most {MAX_PROOF_BYTES} bytes.")
    signed = _extract(proof, refuse)
    header = signed.headers()
    if header.get("typ") != PROOF_TYPE:
        raise refuse(f"The DPoP proof's typ must be {PROOF_TYPE}.")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise refuse(f"The DPoP proof's alg must be one of {' '.join(ALGORITHMS)}.")
    if alg not in algorithms:
        raise refuse(FAPI2_ALGORITHM_RULE.format(alg=alg))
    key = _public_key(header.get("jwk"), alg, refuse)
    from joserfc import jws  # loaded by _extract already

    try:
        verified = jws.validate_compact(signed, key, [alg], _registry())
    except (JoseError, ValueError):
        verified = False
    if not verified:
        raise refuse("The DPoP proof's signature does not verify with its jwk.")
    claims = _claims(signed.payload)
    if claims is None:
        raise refuse("The DPoP proof's payload is not a JSON object (each member once, every number finite).")
    return key, claims, alg


def _check_claims(
    claims: dict[str, Any], method: str, uri: str, access_token: str | None, refuse: Callable[[str], DPoPError]
) -> tuple[str, str]:
    """The proof's jti and the request's normalised URI, once jti, htm, htu, iat and ath are checked."""
    jti = claims.get("jti")
    if not isinstance(jti, str) or not 0 < len(jti) <= MAX_JTI_LENGTH:
        raise refuse(f"The DPoP proof's jti must be a string of 1 to {MAX_JTI_LENGTH} characters.")
    if claims.get("htm") != method:
        raise refuse(f"The DPoP proof's htm must be {method}.")
    target = normalised_uri(uri)
    if not isinstance(claims.get("htu"), str) or normalised_uri(claims["htu"]) != target:
        raise refuse("The DPoP proof's htu is not this request's URI.")
    lifetime = settings().dpop_proof_lifetime
    iat = claims.get("iat")
    moment = clock.time()
    if not isinstance(iat, int | float) or isinstance(iat, bool) or not moment - lifetime <= iat <= moment + CLOCK_SKEW:
        raise refuse(f"The DPoP proof's iat must be within {lifetime} seconds of this server's clock.")
    if access_token is not None and claims.get("ath") != access_token_hash(access_token):
        raise refuse("The DPoP proof's ath is not the hash of the access token presented.")
    return jti, target


def request_proof(
    *,
    access_token: str | None = None,
    jkt: str | None = None,
    resource: bool = False,
    nonce: bool = True,
    fapi2: bool = False,
) -> Proof | None:
    """The request's ``DPoP`` proof, checked for this request's method and URI; None without one.

    ``nonce``: the endpoint requires server nonces (then as AUTHSVC_DPOP_NONCE says).
    ``fapi2``: the request is to a FAPI 2.0 domain (its algorithms only).
    The nonce to give the client next is added to the response by ``add_nonce``.
    """
    if "HTTP_DPOP" not in flask_request.environ:
        # No DPoP header (most requests): the environ's key says so at once, where the headers' getlist
        # walks every header of the request.
        return None
    presented = flask_request.headers.getlist("DPoP")
    if not presented:
        return None
    if len(presented) > 1:
        raise DPoPError("invalid_dpop_proof", "Send one DPoP header, not several.", resource=resource, fapi2=fapi2)
    proof = verify(
        presented[0],
        flask_request.method,
        flask_request.base_url,
        access_token=access_token,
        jkt=jkt,
        nonce=nonce and settings().dpop_nonce,
        resource=resource,
        fapi2=fapi2,
    )
    if proof.next_nonce:
        noted = part(NextNonce)
        noted.value = noted.value or proof.next_nonce
    return proof


def add_nonce(response: Response) -> Response:
    """Give the client the current nonce with any answer to a request that carried a proof (RFC 9449 8.2)."""
    nonce = part(NextNonce).value
    if nonce and "DPoP-Nonce" not in response.headers:
        response.headers["DPoP-Nonce"] = nonce
    return response


def _extract(proof: str, refuse: Any) -> jws.CompactSignature:
    from joserfc import jws

    try:
        signed = jws.extract_compact(proof.encode(), registry=_registry())
        header = signed.headers()
        signed_json.jose_header(proof)  # each member once (joserfc's reading keeps the last)
    except (JoseError, ValueError, TypeError, RecursionError):
        raise refuse("The DPoP proof is not a well-formed JWS.") from None
    if not isinstance(header, dict):
        raise refuse("The DPoP proof's header is not a JSON object.")
    return signed


def _public_key(jwk: Any, alg: str, refuse: Any) -> ECKey | RSAKey | OKPKey:
    """The proof's ``jwk``: a public key only, of the type its alg uses."""
    if not isinstance(jwk, dict):
        raise refuse("The DPoP proof's header must carry its public key (jwk).")
    if _PRIVATE_MEMBERS & set(jwk):
        raise refuse("The DPoP proof's jwk must be a public key: it carries private key members.")
    if jwk.get("kty") != _KEY_TYPES[alg]:
        raise refuse(f"The DPoP proof's jwk must be an {_KEY_TYPES[alg]} key for {alg}.")
    from joserfc.jwk import ECKey, OKPKey, RSAKey, import_key

    try:
        key = import_key(jwk)
    except (JoseError, ValueError, TypeError):
        raise refuse("The DPoP proof's jwk is not a usable key.") from None
    if alg == "ES256" and jwk.get("crv") != "P-256":
        raise refuse("The DPoP proof's jwk must be on curve P-256 for ES256.")
    if alg in ("EdDSA", "Ed25519") and jwk.get("crv") != "Ed25519":
        raise refuse("The DPoP proof's jwk must be an Ed25519 key.")
    if isinstance(key, RSAKey) and not _MIN_RSA_BITS <= key.raw_value.key_size <= _MAX_RSA_BITS:
        raise refuse(f"The DPoP proof's RSA key must have {_MIN_RSA_BITS} to {_MAX_RSA_BITS} bits.")
    if not isinstance(key, ECKey | RSAKey | OKPKey):  # a symmetric jwk is refused by its kty above
        raise refuse("The DPoP proof's jwk must be a public key.")
    return key


def _claims(payload: bytes) -> dict[str, Any] | None:
    try:
        claims = signed_json.signed_json(payload)  # each member once, numbers finite
    except (ValueError, RecursionError):
        return None
    return claims if isinstance(claims, dict) else None


# Each proof's jti once per target URI (RFC 9449 11.1), and the server's nonces (RFC 9449 8), in the store.


def _claim_jti(target_jti: str, ttl: int, nonce_lifetime: int | None) -> tuple[bool, str | None, set[str]]:
    """Claim a proof's ``jti`` (SET NX) and, with ``nonce_lifetime``, read the nonces: one round trip.

    Returns whether this was the jti's first use, the current nonce (made by
    the first request of its window, on whichever instance) and the nonces
    accepted now: the current window's and the previous one's.
    """
    pipe = store.client().pipeline(transaction=False)
    pipe.set(store.key("dpop-jti", target_jti), "1", nx=True, ex=max(ttl, 1))
    if nonce_lifetime:
        window = clock.now() // nonce_lifetime
        # Per domain: a nonce is one issuer's word (RFC 9449 8), and another domain's proves nothing here. Keyed on
        # the domain's host name, which names it (core.tenancy), rather than its id: the proof is checked before
        # the client's lookup finds the domain, and a statement more per DPoP request is not worth it. Nonces are
        # asked for within a request only (the inspect fast path takes none).
        prefix = f"{store.PREFIX}dpop-nonce:{security.digest(request_host())}:"
        current_key, previous_key = f"{prefix}{window}", f"{prefix}{window - 1}"
        # Of two instances starting a window at once, the first SET NX wins and both read its nonce.
        pipe.set(current_key, security.new_secret(), nx=True, ex=2 * nonce_lifetime + 5)
        pipe.mget(current_key, previous_key)
    results = pipe.execute()
    if not nonce_lifetime:
        return bool(results[0]), None, set()
    current, previous = results[2]
    return bool(results[0]), current, {n for n in (current, previous) if n}
