"""Input rules shared by the CLI, the admin API, the console and the request parsers: one place each.

Every function returns the normalised value or raises ``Invalid`` with a
message fit to show the operator.
"""

from __future__ import annotations

import json
import re
import socket
from ipaddress import IPv4Address, IPv6Address, ip_address
from urllib.parse import urlsplit

from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from authsvc.core import destinations

HOST_PATTERN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
SCOPE_PATTERN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")
EMAIL_PATTERN = re.compile(r"^[^@\s\x00-\x1f]+@[^@\s\x00-\x1f]+$")
MAX_TTL = 10 * 365 * 24 * 3600


class Invalid(ValueError):
    """A value an operator gave that cannot be used; the message says why."""


def host(value: str) -> str:
    value = value.strip().lower()
    if not HOST_PATTERN.match(value):
        try:
            ip_address(value)
        except ValueError:
            raise Invalid(f"{value!r} is not a host name") from None
    return value


def scopes(value: str, known: list[str] | None = None) -> str:
    items = list(dict.fromkeys(value.split()))
    if not items:
        raise Invalid("at least one scope is needed")
    for scope in items:
        if not SCOPE_PATTERN.match(scope):
            raise Invalid(f"{scope!r} is not a valid scope name")
        if known is not None and scope not in known:
            raise Invalid(f"unknown scope {scope!r}; the domain knows: {' '.join(known)}")
    return " ".join(items)


def is_loopback(value: str) -> bool:
    if value == "localhost":
        return True
    try:
        return ip_address(value).is_loopback
    except ValueError:
        return False


def redirect_uri(uri: str) -> str:
    """An absolute URI without fragment; plain http only for loopback (RFC 8252 7.3, RFC 9700 2.6)."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise Invalid(f"{uri!r} is not a valid URI") from None
    if any(ord(c) <= 0x20 or ord(c) >= 0x7F or c in '"\\<>' for c in uri):
        raise Invalid(f"{uri!r} has characters a URI cannot hold")
    if not parts.scheme or parts.fragment or "#" in uri:
        raise Invalid(f"{uri!r} must be an absolute URI without a fragment")
    scheme = parts.scheme.lower()
    if scheme in ("javascript", "data", "file", "vbscript", "about", "blob"):
        raise Invalid(f"{uri!r} uses a scheme that cannot be a redirect URI")
    if scheme in ("http", "https") and not parts.hostname:
        raise Invalid(f"{uri!r} has no host")
    if "@" in parts.netloc:
        # "https://app.example@evil.example/cb" goes to evil.example; a reader (and a lax matcher) sees app.example.
        raise Invalid(f"{uri!r} must not hold a user name or password before its host")
    if scheme == "http" and not is_loopback(parts.hostname or ""):
        raise Invalid(f"{uri!r}: plain http is allowed only for localhost and loopback addresses")
    return uri


def backchannel_logout_uri(uri: str) -> str:
    """An absolute https URL without fragment (Back-Channel Logout 2.2); plain http only for loopback."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise Invalid(f"{uri!r} is not a valid URL") from None
    if any(ord(c) <= 0x20 or ord(c) >= 0x7F for c in uri):
        raise Invalid(f"{uri!r} has characters a URL cannot hold")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment or "#" in uri:
        raise Invalid(f"{uri!r} must be an absolute https URL without a fragment")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise Invalid(f"{uri!r}: plain http is allowed only for localhost and loopback addresses")
    return uri


def email(value: str) -> str:
    value = value.strip().lower()
    if len(value) > 320 or not EMAIL_PATTERN.match(value):
        raise Invalid(f"{value!r} is not an e-mail address")
    return value


def password(value: str) -> str:
    if len(value) < 8:
        raise Invalid("the password must have at least 8 characters")
    if len(value) > 1024:
        raise Invalid("the password must have at most 1024 characters")
    return value


def ttl(value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TTL:
        raise Invalid(f"a lifetime is a whole number of seconds from 0 to {MAX_TTL}")
    return value or None


def provider_url(url: str | None, what: str) -> str | None:
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise Invalid(f"{what} {url!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise Invalid(f"{what} {url!r} must be an absolute http(s) URL")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise Invalid(f"{what} {url!r}: plain http is allowed only for loopback addresses")
    return url


def public_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a URL the service calls for a tenant, kept off private networks; or None.

    What a name resolves to is checked on every request (authsvc.core.outbound);
    this refuses what can be seen at registration: plain http and address literals.
    """
    parts = urlsplit(url)
    if parts.scheme != "https":
        return "must use https (plain http only for a loopback provider a system admin allowed on private networks)"
    host = (parts.hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return "must not point at a loopback or private address"
    address = address_literal(host)
    if address is None:
        return None
    return None if is_public_address(address) else "must not point at a loopback or private address"


# What the system resolver reads as an IPv4 address besides dotted quads (inet_aton): 2130706433,
# 0x7f000001, 0177.0.0.1, 127.1. A name of digits, dots and hex prefixes is never a DNS name one can register.
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$")


def address_literal(host: str) -> IPv4Address | IPv6Address | None:
    """The address ``host`` names literally, in any form the resolver accepts; None for a name."""
    try:
        return ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        try:
            return IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def is_public_address(address: IPv4Address | IPv6Address) -> bool:
    if isinstance(address, IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


# The largest value of SQL's INTEGER, the type of every id and moment column.
MAX_INTEGER = 2**31 - 1


def record_id(value: str | None, max_digits: int = 10) -> int | None:
    """A numeric id (or count) from a path or query, or None when no record can have it.

    ASCII digits only: ``str.isdigit()`` also takes "²" (which ``int()``
    refuses) and "١" (which ``int()`` reads as 1, another record). Within
    INTEGER: PostgreSQL refuses a larger number rather than finding nothing.
    """
    if value and value.isascii() and value.isdigit() and len(value) <= max_digits:
        number = int(value)
        return number if number <= MAX_INTEGER else None
    return None


def text_id(value: str | None) -> bool:
    """Whether ``value`` could be an API key's or SSO provider's id (hex, at most 32 characters).

    Anything else is no record and never reaches the database: PostgreSQL
    refuses NUL in a query parameter.
    """
    return bool(value) and len(value) <= 32 and value.isascii() and value.isalnum()


def json_body(data: bytes, empty: object = None) -> object:
    """The JSON document a request body holds; ``empty`` when the body is empty.

    Every JSON entry point reads its body here, so the shared rules hold for all:
    text that cannot be encoded as UTF-8 is refused, and a member whose value is
    ``null`` counts as missing (the readers of fields test for None).
    """
    if not data:
        return empty
    try:
        body = json.loads(data)
    except ValueError:  # UnicodeDecodeError too: bytes that are no UTF-8, -16 or -32
        raise Invalid("The body is not valid JSON.") from None
    except RecursionError:  # "[[[[..." a few thousand deep fits in any body size limit
        raise Invalid("The JSON body is nested too deeply.") from None
    _require_utf8(body)
    return body


def _require_utf8(document: object) -> None:
    # JSON's "\ud800" escape decodes to a lone surrogate, which no UTF-8 database,
    # digest or log line can take. Walked with a list, not recursion: json.loads
    # accepts nesting deeper than a recursive walk could follow.
    pending = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise Invalid("The JSON body holds text that is not valid Unicode (a lone surrogate).") from None


def json_object(data: bytes) -> dict:
    """A request body that must be a JSON object (an empty body is an empty one)."""
    body = json_body(data, {})
    if not isinstance(body, dict):
        raise Invalid("The JSON body must be an object.")
    return body


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
    kids = []
    for key in keys:
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
        kids.append(kid)
    if len(keys) > 1 and (None in kids or len(set(kids)) != len(kids)):
        raise Invalid("with more than one key, every key needs its own kid")
    try:
        parsed = KeySet.import_key_set({"keys": keys})
    # joserfc refuses malformed keys with its own errors, and some (an unknown curve) with a KeyError.
    except (JoseError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise Invalid(f"the JWKS holds a key that cannot be read ({exc.__class__.__name__})") from None
    for key in parsed.keys:
        if key.key_type == "RSA" and not 2048 <= key.raw_value.key_size <= 8192:
            raise Invalid("RSA keys must have 2048 to 8192 bits")
    return {"keys": keys}


def client_jwks_uri(url: str, *, allow_private: bool) -> str:
    """Where the service fetches a client's JWKS: https to a public address unless private networks are allowed."""
    return client_url(url, "jwks_uri", allow_private=allow_private)


def client_url(url: str, what: str, *, allow_private: bool) -> str:
    """A URL the service calls for a client (``jwks_uri``, ``backchannel_logout_uri``), for the admin path and
    dynamic registration alike: absolute http(s) (http only for loopback); unless ``allow_private``, https to a
    public address, literal (in any form the resolver reads) or what the name resolves to now.
    """
    if len(url) > 2000:
        raise Invalid(f"{what} is longer than 2000 characters")
    provider_url(url, what)
    if allow_private:
        return url
    problem = public_url_problem(url)
    if problem is None:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
        if any(not is_public_address(address) for address in destinations.addresses(host)):
            problem = "must not point at a loopback or private address (its name resolves to one)"
    if problem:
        raise Invalid(f"{what} {problem}")
    return url


def client_authentication(
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
