"""Security decisions, one place each: secret digests, passwords, safe redirects."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from flask import Flask, current_app

from authsvc.core import tracing
from authsvc.core.settings import settings

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

# Random secrets are 256-bit; a plain SHA-256 digest is enough at that entropy
# (no dictionary to attack), and it keeps lookups a single indexed equality.
TOKEN_BYTES = 32

EXTENSION = "authsvc.security"


@dataclass
class Keys:
    """The app's password cost and keys for data at rest (``app.extensions["authsvc.security"]``)."""

    bcrypt_rounds: int
    encryption_keys: list[str]
    # Built on first need: see _cipher and check_password.
    fernet: MultiFernet | None = None
    dummy_hash: bytes | None = None


def new_secret() -> str:
    """Return a new opaque secret: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def digest(secret: str) -> str:
    """The only form in which tokens and client or key secrets are stored."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def digest_matches(secret: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(secret), stored_digest)


def init_app(app: Flask) -> None:
    """Keep the app's bcrypt rounds and encryption keys on it (checked now: a bad key stops the start)."""
    keys = encryption_keys(settings(app).encryption_keys, settings(app).secret_key)
    app.extensions[EXTENSION] = Keys(bcrypt_rounds=settings(app).bcrypt_rounds, encryption_keys=keys)


def _keys() -> Keys:
    return cast(Keys, current_app.extensions[EXTENSION])


def encryption_keys(keys: list[str], secret_key: str) -> list[str]:
    """Keys for data encrypted at rest; the first encrypts, all decrypt (rotation).

    Without keys, one is derived from SECRET_KEY, so that rotating SECRET_KEY
    also needs AUTHSVC_ENCRYPTION_KEYS to keep the old one readable.
    """
    if not keys:
        keys = [
            base64.urlsafe_b64encode(hashlib.sha256(b"authsvc-encryption:" + secret_key.encode()).digest()).decode()
        ]
    # Checked now, as Fernet would, so that a bad key stops the start, not a sign-in later.
    for key in keys:
        try:
            raw = base64.urlsafe_b64decode(key.encode())
        except ValueError:
            raw = b""
        if len(raw) != 32:
            raise ValueError("Fernet key must be 32 url-safe base64-encoded bytes.")
    return keys


def _cipher() -> MultiFernet:
    # Built on first use: only SSO stores encrypted data, and cryptography's
    # Fernet is a few MB that most workers never need (hence the import here).
    keys = _keys()
    if keys.fernet is None:
        from cryptography.fernet import Fernet, MultiFernet

        keys.fernet = MultiFernet([Fernet(key.encode()) for key in keys.encryption_keys])
    return keys.fernet


def encrypt(plaintext: str) -> str:
    return _cipher().encrypt(plaintext.encode("utf-8")).decode("ascii")


def decrypt(ciphertext: str) -> str:
    """Decrypt what ``encrypt`` made; raises ValueError if no key can."""
    from cryptography.fernet import InvalidToken  # a few MB, as in _cipher

    try:
        return _cipher().decrypt(ciphertext.encode("ascii")).decode("utf-8")
    except InvalidToken:
        raise ValueError("data encrypted with an unknown key") from None


def hash_password(password: str) -> str:
    # bcrypt (half a megabyte) at the first password hashed or checked: a worker that serves only API
    # requests never loads it (docs/performance.md, "Memory by role").
    import bcrypt

    with tracing.span("bcrypt.hashpw"):
        return bcrypt.hashpw(_password_bytes(password), bcrypt.gensalt(_keys().bcrypt_rounds)).decode("ascii")


def check_password(password: str, password_hash: str | None) -> bool:
    """Check ``password``; with no hash, spend the same time and fail.

    An unknown user, or one with no password, costs one bcrypt check like a
    known one, so that timing does not tell which e-mail addresses exist.
    """
    import bcrypt  # as in hash_password

    with tracing.span("bcrypt.checkpw"):
        if password_hash is None:
            keys = _keys()
            if keys.dummy_hash is None:
                keys.dummy_hash = bcrypt.hashpw(b"dummy", bcrypt.gensalt(keys.bcrypt_rounds))
            bcrypt.checkpw(_password_bytes(password), keys.dummy_hash)
            return False
        return bcrypt.checkpw(_password_bytes(password), password_hash.encode("ascii"))


def _password_bytes(password: str) -> bytes:
    # bcrypt reads at most 72 bytes and bcrypt 5 refuses longer input; hashing
    # first keeps every byte of a long password significant.
    raw = password.encode("utf-8", "surrogatepass")
    if len(raw) > 72:
        raw = hashlib.sha256(raw).hexdigest().encode("ascii")
    return raw


DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(scheme: str, host: str | None, port: int | None) -> tuple[str, str, int | None]:
    scheme = scheme.lower()
    return scheme, (host or "").lower(), port or DEFAULT_PORTS.get(scheme)


def safe_continue(target: str | None, origin: str, default: str = "/") -> str:
    """Return ``target`` if it stays on ``origin`` (the request's ``scheme://host[:port]``), else ``default``.

    Every redirect after sign-in or sign-out goes through here. Relative paths
    pass, and absolute http(s) URLs of exactly the request's origin: same
    scheme, host and port (another port or plain http is another origin to a
    browser); anything a browser could read as another origin does not.
    """
    if not target or len(target) > 2048:
        return default
    # Browsers strip or reinterpret control characters, spaces and
    # backslashes ("/\\evil.com" is "//evil.com" to them).
    if any(ord(c) < 0x21 or ord(c) == 0x7F or c == "\\" for c in target):
        return default
    try:
        parts = urlsplit(target)
        ours = urlsplit(origin)
        if not parts.scheme and not parts.netloc:
            return target if target.startswith("/") and not target.startswith("//") else default
        if parts.scheme.lower() not in ("http", "https") or parts.username or parts.password:
            return default
        same = _origin(parts.scheme, parts.hostname, parts.port) == _origin(ours.scheme, ours.hostname, ours.port)
    except ValueError:  # a malformed host or port
        return default
    return target if same else default


UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def forged_cross_site_request(method: str, headers: Any, origin: str) -> bool:
    """Whether a state-changing request comes from another site's page, riding on cookies.

    A browser sends ``Sec-Fetch-Site`` (and ``Origin`` on POST) with what a
    page of another site makes it send: a form posted to /auth/signin (login
    CSRF) or to an endpoint that trusts the ``bearer_token`` or ``api-key``
    cookie. Programmatic clients send neither header, and a request carrying
    its credential in a header was not forged by a page. ``Origin`` must be
    the request's own ``origin`` (``scheme://host[:port]``) as ``safe_continue``
    compares them: the same host name on plain http or another port is
    another origin (RFC 6454), whose page may not post here. The views that other origins call
    by design are declared ``@cross_site`` (authsvc.core.policy) and never asked about.
    """
    if method not in UNSAFE_METHODS:
        return False
    if headers.get("Authorization") or headers.get("X-API-Key"):
        return False
    if headers.get("Sec-Fetch-Site") == "cross-site":
        return True
    sent = headers.get("Origin")
    if sent is None:
        return False
    if sent == "null":  # sandboxed frames and data: URLs: never our own pages
        return True
    try:
        theirs, ours = urlsplit(sent), urlsplit(origin)
        return _origin(theirs.scheme, theirs.hostname, theirs.port) != _origin(ours.scheme, ours.hostname, ours.port)
    except ValueError:  # a malformed host or port
        return True


def embedded_cross_site_request(headers: Any) -> bool:
    """Whether another origin's page made the browser fetch this as a resource, not a page.

    For GET /auth/logout, which a GET must serve (docs/platform.md#signing-out): an application's
    "sign out" link is a top-level navigation (``Sec-Fetch-Mode: navigate``,
    ``Sec-Fetch-Dest: document``) and passes; an image, script, fetch or frame
    on a page of another site, or of a sibling subdomain (``same-site``, where
    SameSite=Lax cookies go along), would sign the user out unseen. Clients
    that send no ``Sec-Fetch-*`` headers are not browsers and pass.
    """
    if headers.get("Sec-Fetch-Site") not in ("cross-site", "same-site"):
        return False
    return bool(headers.get("Sec-Fetch-Mode") != "navigate" or headers.get("Sec-Fetch-Dest", "document") != "document")
