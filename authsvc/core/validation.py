"""Input rules shared by the CLI, the admin API, the console and the request parsers: one place each.

Every function returns the normalised value or raises ``Invalid`` with a
message fit to show the operator.
"""

from __future__ import annotations

import functools
import json
import re
import socket
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network
from typing import Any
from urllib.parse import SplitResult, urlsplit

import email_validator

from authsvc.core import destinations
from authsvc.core.marks import N_

HOST_PATTERN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
SCOPE_PATTERN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")
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
    """Whether ``value`` (a host name or address) is this machine: the one rule for plain http.

    ``localhost`` and every name under it are loopback (RFC 6761 6.3: resolvers answer them with
    the loopback address and never ask the network), so ``acme.localhost`` serves a second
    domain on a developer's machine; so are the loopback addresses.
    """
    name = value.lower().rstrip(".")
    if name == "localhost" or (name.endswith(".localhost") and name != ".localhost" and not name.startswith(".")):
        return True
    try:
        return ip_address(value).is_loopback
    except ValueError:
        return False


def _split(url: str, shown: str, noun: str = "URL", *, forbidden: str | None = None) -> SplitResult:
    """``url`` parsed once, by the rules every URL validator here shares, or ``Invalid`` naming it as ``shown``.

    It must parse and any port must be a number. With ``forbidden`` (extra
    characters to refuse, "" for none), whitespace, control and non-ASCII
    characters are refused too: a URL compared or stored byte for byte must
    not hold what a browser or a logger would rewrite.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise Invalid(f"{shown} is not a valid {noun}") from None
    if forbidden is not None and any(ord(c) <= 0x20 or ord(c) >= 0x7F or c in forbidden for c in url):
        raise Invalid(f"{shown} has characters a {noun} cannot hold")
    return parts


def redirect_uri(uri: str) -> str:
    """An absolute URI without fragment; plain http only for loopback (RFC 8252 7.3, RFC 9700 2.6)."""
    parts = _split(uri, repr(uri), "URI", forbidden='"\\<>')
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


def resource_indicator(uri: str) -> str:
    """A resource an access token may be for (RFC 8707 2): an absolute URI without a fragment.

    No whitespace either: a token keeps its audience as a space-separated list.
    """
    parts = _split(uri, repr(uri), "URI", forbidden='"\\<>')
    if not parts.scheme or parts.fragment or "#" in uri:
        raise Invalid(f"{uri!r} must be an absolute URI without a fragment")
    if parts.scheme.lower() in ("http", "https") and not parts.hostname:
        raise Invalid(f"{uri!r} has no host")
    return uri


def backchannel_logout_uri(uri: str) -> str:
    """An absolute https URL without fragment (Back-Channel Logout 2.2); plain http only for loopback."""
    parts = _split(uri, repr(uri), forbidden="")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment or "#" in uri:
        raise Invalid(f"{uri!r} must be an absolute https URL without a fragment")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise Invalid(f"{uri!r}: plain http is allowed only for localhost and loopback addresses")
    return uri


# The one e-mail rule (docs/security.md, "E-mail addresses"): RFC 5321/5322 syntax as email-validator
# checks it, without asking DNS, and with the namespaces directories give people that are not on the
# public Internet (Active Directory's "corp.local" UPN suffixes, RFC 6761's ".test", single-label
# hosts): email-validator refuses those by default, as undeliverable. It reads these module settings,
# which it documents for its users to change, on every call: pydantic's EmailStr (the ``emails`` of
# SCIM's scim2-models) calls it too, so SCIM and every other surface hold the same rule.
email_validator.CHECK_DELIVERABILITY = False
email_validator.GLOBALLY_DELIVERABLE = False
email_validator.SPECIAL_USE_DOMAIN_NAMES = []
# RFC 5321 4.5.3.1.1: at most 64 octets before the "@" (the only check "strict" adds).
email_validator.STRICT = True


def account_name(typed: str) -> str:
    """The account a typed e-mail address names in its domain: the address in its stored form (``email``:
    lower case, NFC, the domain's Unicode form), or, for what is no address, trimmed and lower-cased
    (which names no account, since every stored address is one).

    One rule for finding the user, checking a directory, and counting attempts against the account
    (authsvc.auth.lockouts, the request rates): a variant spelling is the same account everywhere.
    """
    if len(typed) > 400:
        # No address is this long (``email`` refuses one over 320), and the cache below keeps no such string.
        return typed.strip().lower()
    return _account_name(typed)


@functools.lru_cache(maxsize=1024)
def _account_name(typed: str) -> str:
    # Cached: one sign-in asks for it three or four times (its rates, its lockout, the lookup).
    try:
        return email(typed)
    except Invalid:
        return typed.strip().lower()


def email(value: str) -> str:
    """An e-mail address in its one stored form: lower-cased (addresses are unique per domain
    case-insensitively) and normalised as email-validator does, so that one mailbox written two ways
    is one address: Unicode NFC (RFC 6531 3.3), the domain in its Unicode form (an ``xn--`` label
    decoded, IDNA 2008)."""
    value = value.strip().lower()
    # Bounded before the parser sees it (RFC 5321 4.5.3.1 allows 254 octets in a path).
    if len(value) > 320:
        raise Invalid(f"{value[:40]!r}... is not an e-mail address")
    try:
        return email_validator.validate_email(value).normalized.lower()
    except email_validator.EmailNotValidError:
        raise Invalid(f"{value!r} is not an e-mail address") from None


def email_domain(value: str) -> str:
    """The domain part of an e-mail address (``example.com``), in the form ``email`` stores it: what an
    address's part after ``@`` is compared with (a domain's sign-up list)."""
    domain = value.strip().lower().removeprefix("@")
    if not domain or "@" in domain or len(domain) > 253:
        raise Invalid(f"{value[:60]!r} is not an e-mail domain")
    try:
        return email(f"someone@{domain}").rpartition("@")[2]
    except Invalid:
        raise Invalid(f"{value[:60]!r} is not an e-mail domain") from None


def password(value: str) -> str:
    if len(value) < 8:
        raise Invalid(N_("the password must have at least 8 characters"))
    if len(value) > 1024:
        raise Invalid(N_("the password must have at most 1024 characters"))
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
    _http_url(url, what)
    return url


def _http_url(url: str, what: str) -> SplitResult:
    """``url`` parsed: absolute http(s), plain http only for loopback; ``what`` names it in the message."""
    parts = _split(url, f"{what} {url!r}")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise Invalid(f"{what} {url!r} must be an absolute http(s) URL")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise Invalid(f"{what} {url!r}: plain http is allowed only for loopback addresses")
    return parts


def public_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a URL the service calls for a tenant, kept off private networks; or None.

    What a name resolves to is checked on every request (authsvc.core.outbound);
    this refuses what can be seen at registration: plain http and address literals.
    """
    return _private_destination(urlsplit(url))


def _private_destination(parts: SplitResult) -> str | None:
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


# Ranges Python's is_global takes for public that the call-time guard (requests-hardened's
# EXTRA_BLOCKED_NET_RANGES) refuses: translators that carry an IPv4 address inside (NAT64, 6to4: 64:ff9b::a00:1
# reaches 10.0.0.1 through a NAT64 gateway), CG-NAT, and the ranges older Pythons misjudge. Copied, not
# imported: requests-hardened imports requests, which web workers load only to make a call.
_REFUSED_AT_CALL_TIME = tuple(
    ip_network(net)
    for net in (
        "192.88.99.0/24",
        "100.64.0.0/10",
        "5f00::/16",
        "64:ff9b::/96",
        "2001:20::/28",
        "192.0.0.0/24",
        "64:ff9b:1::/48",
        "2002::/16",
        "3fff::/20",
    )
)


def is_public_address(address: IPv4Address | IPv6Address) -> bool:
    if isinstance(address, IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if any(address in net for net in _REFUSED_AT_CALL_TIME):
        return False
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
    return value is not None and 0 < len(value) <= 32 and value.isascii() and value.isalnum()


def json_body(data: bytes, empty: object = None, *, allow_nul: bool = True) -> object:
    """The JSON document a request body holds; ``empty`` when the body is empty.

    Every JSON entry point reads its body here, so the shared rules hold for all:
    text that cannot be encoded as UTF-8 is refused, and a member whose value is
    ``null`` counts as missing (the readers of fields test for None). Without
    ``allow_nul``, text holding NUL is refused too: an entry point that stores
    strings as they come (SCIM) needs that, as no PostgreSQL text or JSON can hold one.
    """
    if not data:
        return empty
    try:
        body = json.loads(data)
    except ValueError:  # UnicodeDecodeError too: bytes that are no UTF-8, -16 or -32
        raise Invalid("The body is not valid JSON.") from None
    except RecursionError:  # "[[[[..." a few thousand deep fits in any body size limit
        raise Invalid("The JSON body is nested too deeply.") from None
    _require_storable(body, allow_nul)
    return body


def storable_text(value: str, *, allow_nul: bool = False) -> bool:
    """Whether a UTF-8 database can hold ``value``: no lone surrogate (JSON's "\\ud800" escape decodes
    to one, which no UTF-8 database, digest or log line can take) and, unless ``allow_nul``, no NUL."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return allow_nul or "\x00" not in value


def _require_storable(document: object, allow_nul: bool) -> None:
    # Walked with a list, not recursion: json.loads accepts nesting deeper than a recursive walk could follow.
    pending = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str) and not storable_text(value, allow_nul=allow_nul):
            if storable_text(value, allow_nul=True):
                raise Invalid("The JSON body holds text with a NUL character.")
            raise Invalid("The JSON body holds text that is not valid Unicode (a lone surrogate).")


def json_object(data: bytes) -> dict[str, Any]:
    """A request body that must be a JSON object (an empty body is an empty one)."""
    body = json_body(data, {})
    if not isinstance(body, dict):
        raise Invalid("The JSON body must be an object.")
    return body


def client_url(url: str, what: str, *, allow_private: bool) -> str:
    """A URL the service calls for a client (``jwks_uri``, ``backchannel_logout_uri``), for the admin path and
    dynamic registration alike: absolute http(s) (http only for loopback); unless ``allow_private``, https to a
    public address, literal (in any form the resolver reads) or what the name resolves to now.
    """
    if len(url) > 2000:
        raise Invalid(f"{what} is longer than 2000 characters")
    parts = _http_url(url, what)
    if allow_private:
        return url
    problem = _private_destination(parts)
    if problem is None:
        host = (parts.hostname or "").rstrip(".").lower()
        if any(not is_public_address(address) for address in destinations.addresses(host)):
            problem = "must not point at a loopback or private address (its name resolves to one)"
    if problem:
        raise Invalid(f"{what} {problem}")
    return url
