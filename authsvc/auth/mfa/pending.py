"""The step between a correct password and the second factor.

What the password proved is kept in Redis under a random ``mfa_token``, for a
few minutes and for one completion. The token alone is not enough: the browser
that typed the password also got a random ``mfa`` cookie whose digest the record
holds, so a token that leaks (a log, a screenshot) is useless elsewhere.
"""

from __future__ import annotations

import hmac

from flask import Response, request

from authsvc.core import security, store
from authsvc.core.models import Domain, User
from authsvc.core.settings import settings

COOKIE = "mfa"


def ttl() -> int:
    return settings().mfa_pending_ttl


def start(user: User, domain: Domain, *, target: str, via: str, enrol: bool) -> tuple[str, str]:
    """Remember that ``user`` passed the password; return the ``mfa_token`` and the browser's binding."""
    token, binding = security.new_secret(), security.new_secret()
    record = {
        "user": user.id,
        "domain": domain.id,
        "continue": target,
        "via": via,
        "enrol": enrol,
        "binding": security.digest(binding),
    }
    store.save_mfa_pending(token, record, ttl())
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


def _bound(record: dict | None, domain: Domain) -> dict | None:
    binding = request.cookies.get(COOKIE, "")
    if record is None or record["domain"] != domain.id or not binding:
        return None
    return record if hmac.compare_digest(security.digest(binding), record["binding"]) else None


def read(token: str, domain: Domain) -> dict | None:
    """The pending sign-in of ``token`` if it is live, of ``domain`` and of this browser."""
    return _bound(store.get_mfa_pending(token), domain) if token else None


def claim(token: str, domain: Domain) -> dict | None:
    """Take the pending sign-in for good (once); None if another request took it first."""
    return _bound(store.take_mfa_pending(token), domain)


def forget(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/auth", httponly=True, secure=settings().cookie_secure)
