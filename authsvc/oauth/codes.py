"""Authorisation codes in the store (authsvc.core.store): single use, short-lived (``AUTHSVC_CODE_TTL``),
and what a spent code leaves behind so that a replay revokes what it produced (RFC 6749 4.1.2).

Keys are named by the code's digest: ``code:`` (the issued code), ``spent-code:`` (the family its tokens
joined), ``replayed-code:`` (a spent code presented again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import cast

from authsvc.core import records, store

KIND = "code"
SPENT = "spent-code"
REPLAYED = "replayed-code"


@dataclass(frozen=True)
class IssuedCode:
    """What the authorisation request decided, until the code is exchanged (grants.AuthorizationCode then)."""

    user: int
    client: int  # the application's row id
    redirect_uri: str | None
    scope: str
    code_challenge: str | None
    code_challenge_method: str | None
    # OpenID Connect: the sign-in behind the code, for its ID token.
    nonce: str | None = None
    auth_time: int | None = None
    amr: list[str] | None = None
    sid: str | None = None
    # RFC 9449 10: the thumbprint of the key the exchange must prove.
    dpop_jkt: str | None = None
    # RFC 8707: the resources the authorisation request named; None when it named none.
    resources: list[str] | None = None
    # When the session the code was issued through began (clock.now_ms): refused once the user's sessions
    # are invalidated after that (sessions.granted_since_invalidation), even when the code was saved in the
    # instant after a concurrent invalidation. A record without it (written before it was kept) counts as
    # older than any invalidation.
    issued_ms: int = 0
    # Whether the code was issued under the FAPI 2.0 profile: one of a domain that switched since is refused.
    fapi2: bool = False


def save(code: str, issued: IssuedCode, ttl: int) -> None:
    store.put(KIND, code, records.dump(issued), ttl)


def claim(code: str, family: str, spent_ttl: int) -> IssuedCode | None:
    """Take the code, once, leaving in its place the ``family`` its tokens will join.

    One transaction: whoever finds the code gone finds the spent marker, so a
    replay always learns which family to revoke. A second claim returns None.
    """
    code_key, spent_key = store.key(KIND, code), store.key(SPENT, code)
    # One round trip, atomic (MULTI/EXEC): of two concurrent claims exactly one gets the code (GETDEL),
    # and the marker is there the moment the code is gone. NX keeps the first claim's family.
    pipe = store.client().pipeline(transaction=True)
    pipe.getdel(code_key)
    pipe.set(spent_key, family, ex=spent_ttl, nx=True)
    raw, marked = pipe.execute()
    if raw is None and marked:
        # No such code: it leaves no marker behind (an unknown code has no tokens to revoke).
        store.client().delete(spent_key)
    return records.load(IssuedCode, json.loads(raw)) if raw else None


def spent_family(code: str) -> str | None:
    return cast("str | None", store.client().get(store.key(SPENT, code)))


def record_replay(code: str, ttl: int) -> None:
    """Note that a spent code was presented again: the exchange that spent it checks after saving its tokens."""
    store.client().set(store.key(REPLAYED, code), "1", ex=ttl)


def replayed(code: str) -> bool:
    return bool(store.client().exists(store.key(REPLAYED, code)))
