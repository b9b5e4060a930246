"""Sign-in sessions in the store (authsvc.core.store): the record the ``user`` cookie's id stands for.

The key is ``session:`` and the digest of the session id, so a copy of Redis
holds no usable session; an index (SAML Single Logout's) may hold only the
digest, and ends a session by it (``take_named``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from authsvc.core import clock, records, security, store

KIND = "session"


@dataclass(frozen=True)
class SignInSession:
    """Who signed in, where, when and how.

    ``sid`` is the session's public name in ID tokens (OpenID Connect): never
    the id itself, which the cookie carries as a bearer secret. ``amr`` names
    how the user signed in (``pwd``, ``fed``, ``mfa``...), ``auth_time`` when
    (seconds). ``saml``: a SAML sign-in's NameID and SessionIndex, for Single Logout.
    """

    user: int
    domain: int
    created: int  # milliseconds: compared with the user's sessions_valid_after
    # Records written before sessions had a sid, an amr or an auth_time still read.
    sid: str | None = None
    amr: list[str] | None = None
    auth_time: int = field(default=0, metadata=records.when_missing(lambda data: data["created"] // 1000))
    saml: dict[str, Any] | None = field(default=None, metadata=records.OMIT_NONE)


def _read(data: dict[str, Any] | None) -> SignInSession | None:
    return records.load(SignInSession, data) if data else None


def create(
    user_id: int,
    domain_id: int,
    ttl: int,
    amr: list[str] | None = None,
    auth_time: int | None = None,
    saml: dict[str, Any] | None = None,
) -> str:
    """Start a new session and return its id; ids are never reused.

    ``auth_time``: when the user signed in; now unless given (a session that
    replaces one without a sign-in keeps the old one's).
    """
    session_id = security.new_secret()
    created = clock.now_ms()
    record = SignInSession(
        user=user_id,
        domain=domain_id,
        created=created,
        sid=security.new_secret(),
        amr=amr or ["pwd"],
        auth_time=auth_time if auth_time is not None else created // 1000,
        saml=saml,
    )
    store.put(KIND, session_id, records.dump(record), ttl)
    return session_id


def get(session_id: str) -> SignInSession | None:
    return _read(store.get(KIND, session_id))


def take(session_id: str) -> SignInSession | None:
    """End the session and return its record (None if it was already gone)."""
    return _read(store.take(KIND, session_id))


def take_named(session_digest: str) -> SignInSession | None:
    """End the session whose id has the digest ``session_digest`` (all an index may hold) and return its record."""
    return _read(store.take_digest(KIND, session_digest))
