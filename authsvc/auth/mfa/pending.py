"""The step between a correct password and the second factor.

What the password proved is kept in Redis under a random ``mfa_token``, for a
few minutes and for one completion. The token alone is not enough: the browser
that typed the password also got a random ``mfa`` cookie whose digest the record
holds, so a token that leaks (a log, a screenshot) is useless elsewhere.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import Any

from flask import Response, request

from authsvc.core import records, security, store
from authsvc.core.models import Domain, User
from authsvc.core.settings import settings

COOKIE = "mfa"
# The store's kind of record (authsvc.core.store): a pending sign-in under the digest of its mfa_token.
KIND = "mfa"


@dataclass(frozen=True)
class PendingSignIn:
    """What a correct password proved, until the second factor: whose, where to go next, how it began."""

    user: int
    domain: int
    # Where the sign-in goes on; "" for the programmatic sign-in (a 202 answer). Stored as "continue":
    # records written before a deploy are still read after it.
    continue_url: str = field(metadata=records.stored_as("continue"))
    via: str  # how the password was checked (the audit's ``via``)
    enrol: bool  # the domain's policy asks this user to enrol a factor first
    binding: str  # the digest of the browser's ``mfa`` cookie


def ttl() -> int:
    return settings().mfa_pending_ttl


def start(user: User, domain: Domain, *, target: str, via: str, enrol: bool) -> tuple[str, str]:
    """Remember that ``user`` passed the password; return the ``mfa_token`` and the browser's binding."""
    token, binding = security.new_secret(), security.new_secret()
    record = PendingSignIn(
        user=user.id, domain=domain.id, continue_url=target, via=via, enrol=enrol, binding=security.digest(binding)
    )
    store.put(KIND, token, records.dump(record), ttl())
    return token, binding


def bind(response: Response, binding: str) -> None:
    """Give the browser the binding of its pending sign-in (``start``'s second value)."""
    response.set_cookie(
        COOKIE,
        binding,
        max_age=ttl(),
        httponly=True,
        secure=settings().cookie_secure,
        samesite="Lax",
        path="/auth",
    )


def _bound(data: dict[str, Any] | None, domain: Domain) -> PendingSignIn | None:
    binding = request.cookies.get(COOKIE, "")
    if data is None or not binding:
        return None
    record = records.load(PendingSignIn, data)
    if record.domain != domain.id:
        return None
    return record if hmac.compare_digest(security.digest(binding), record.binding) else None


def read(token: str, domain: Domain) -> PendingSignIn | None:
    """The pending sign-in of ``token`` if it is live, of ``domain`` and of this browser."""
    return _bound(store.get(KIND, token), domain) if token else None


def claim(token: str, domain: Domain) -> PendingSignIn | None:
    """Take the pending sign-in for good (once); None if another request took it first.

    Of two concurrent completions, one wins (the store's take is atomic)."""
    return _bound(store.take(KIND, token), domain)


def forget(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/auth", httponly=True, secure=settings().cookie_secure)
