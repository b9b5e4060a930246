"""Which client authentication an application may have: the method and the keys that go with it.

The policy the CLI, the admin API and dynamic registration share (RFC 7591
names): which ``token_endpoint_auth_method`` values exist, which public keys a
private_key_jwt client (RFC 7523) may register, and which algorithms its
assertions may use. Every function returns the value to store or raises
``validation.Invalid``. Nothing here runs at a token request: authenticating
a request's client is authsvc.oauth.clients' (and private_key_jwt's).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

from joserfc.errors import JoseError

from authsvc.core import validation
from authsvc.core.validation import Invalid

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

# Client authentication (RFC 7591 names). private_key_jwt (RFC 7523) replaces the
# secret with the client's public keys: a JWKS given inline or at a jwks_uri.
TOKEN_ENDPOINT_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")
# The signature algorithms a client assertion may use: asymmetric only (an HS256
# assertion "signed" with a public key as its secret proves nothing).
CLIENT_ASSERTION_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]
JWKS_MAX_KEYS = 10
JWKS_MAX_BYTES = 32 * 1024
_CLIENT_KEY_TYPES = ("RSA", "EC")
_PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}


def client_jwks(document: object) -> dict:
    """A client's JWKS for private_key_jwt: public RSA (2048 to 8192 bits) or EC signing keys only.

    A private member (``d``, ``p``...) means the client handed over its private
    key: refused, never stored. Shared by the CLI, the admin API and dynamic registration.
    """
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise Invalid('the JWKS must be a JSON object with a "keys" list')
    keys = document["keys"]
    if not 1 <= len(keys) <= JWKS_MAX_KEYS:
        raise Invalid(f"the JWKS must hold between 1 and {JWKS_MAX_KEYS} keys")
    if len(json.dumps(document)) > JWKS_MAX_BYTES:
        raise Invalid(f"the JWKS is larger than {JWKS_MAX_BYTES} bytes")
    kids = [_public_signing_key_kid(key) for key in keys]
    if len(keys) > 1 and (None in kids or len(set(kids)) != len(kids)):
        raise Invalid("with more than one key, every key needs its own kid")
    # joserfc's keys load cryptography (about 10 MB): imported here, not with the app.
    from joserfc.jwk import KeySet

    try:
        parsed = KeySet.import_key_set({"keys": keys})
    # joserfc refuses malformed keys with its own errors, and some (an unknown curve) with a KeyError.
    except (JoseError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise Invalid(f"the JWKS holds a key that cannot be read ({exc.__class__.__name__})") from None
    for key in parsed.keys:
        if key.key_type == "RSA" and not 2048 <= cast("RSAPublicKey", key.raw_value).key_size <= 8192:
            raise Invalid("RSA keys must have 2048 to 8192 bits")
    return {"keys": keys}


def _public_signing_key_kid(key: object) -> str | None:
    """The kid of one JWK of a client's JWKS, once it is a public RSA or EC signing key."""
    if not isinstance(key, dict):
        raise Invalid("every key of the JWKS must be a JSON object")
    if _PRIVATE_MEMBERS & key.keys():
        raise Invalid("the JWKS holds private key material: register the public keys only")
    if key.get("kty") not in _CLIENT_KEY_TYPES:
        raise Invalid('every key must have kty "RSA" or "EC" (no symmetric "oct" keys)')
    if key.get("use", "sig") != "sig":
        raise Invalid('a key\'s "use" must be "sig"')
    if "alg" in key and key["alg"] not in CLIENT_ASSERTION_ALGORITHMS:
        raise Invalid(f"a key's alg must be one of {' '.join(CLIENT_ASSERTION_ALGORITHMS)}")
    kid = key.get("kid")
    if kid is not None and not (isinstance(kid, str) and 0 < len(kid) <= 200):
        raise Invalid("a key's kid must be a string of at most 200 characters")
    return kid


def client_jwks_uri(url: str, *, allow_private: bool) -> str:
    """Where the service fetches a client's JWKS: https to a public address unless private networks are allowed."""
    return validation.client_url(url, "jwks_uri", allow_private=allow_private)


def fields(
    method: str | None, jwks: object = None, jwks_uri: str | None = None, *, allow_private: bool = False
) -> dict:
    """The client-authentication fields of an application, checked together.

    ``method`` None means "as the keys say": private_key_jwt with a JWKS, else
    the default of the application's kind (a secret when confidential, none when public).
    Returns ``token_endpoint_auth_method``, ``jwks`` and ``jwks_uri`` to store.
    """
    if method is not None and method not in TOKEN_ENDPOINT_AUTH_METHODS:
        raise Invalid(f"token_endpoint_auth_method must be one of {' '.join(TOKEN_ENDPOINT_AUTH_METHODS)}")
    if jwks is not None and jwks_uri is not None:
        raise Invalid("give jwks or jwks_uri, not both")
    has_keys = jwks is not None or jwks_uri is not None
    if method is None and has_keys:
        method = "private_key_jwt"
    if method == "private_key_jwt" and not has_keys:
        raise Invalid("private_key_jwt needs the client's public keys: jwks or jwks_uri")
    if method != "private_key_jwt" and has_keys:
        raise Invalid("jwks and jwks_uri are only for token_endpoint_auth_method private_key_jwt")
    return {
        "token_endpoint_auth_method": method,
        "jwks": client_jwks(jwks) if jwks is not None else None,
        "jwks_uri": client_jwks_uri(jwks_uri, allow_private=allow_private) if jwks_uri is not None else None,
    }
