"""Lockouts after failed sign-ins, counted in Redis so that every worker and instance shares them.

Each failed password attempt counts against the account and the client
address. At the threshold the account (or address) is locked for
``AUTHSVC_LOCKOUT_BASE`` seconds, and every further failure doubles that, up to
``AUTHSVC_LOCKOUT_MAX``. While locked, even the right password is refused, with
the time to wait. A successful sign-in clears the account's count.
"""

from __future__ import annotations

import math

from authsvc.core import actors, audit, security, store, validation
from authsvc.core.errors import LockedOut
from authsvc.core.models import Domain, User
from authsvc.core.settings import settings
from authsvc.web import metrics
from authsvc.web.deployment import client_address

# The request rates' prefix (authsvc.app.limits): one namespace for every counter of a limit.
PREFIX = f"{store.PREFIX}limits"


def account_key(domain_id: int, email: str) -> str:
    """What counts an account's attempts (here and in the request rates): a digest keeps e-mail
    addresses out of Redis, and the domain's id, not the Host header, keeps domains apart, so that
    a port or another name that reaches the same domain is the same account."""
    return security.digest(f"{domain_id} {validation.account_name(email)}")


def _subjects(domain: Domain, email: str, kind: str = "") -> list[tuple[str, str, int]]:
    """(scope, key suffix, threshold) of what a password attempt counts against.

    Another ``kind`` of secret (``device``: user codes) counts apart, so that
    wrong user codes do not lock the account's password sign-in, and the other way round.
    """
    config = settings()
    account = account_key(domain.id, email)
    prefix = f"{kind}-" if kind else ""
    return [
        (f"{prefix}account", account, config.lockout_threshold),
        (f"{prefix}address", client_address(), config.lockout_address_threshold),
    ]


def refuse_if_locked_out(domain: Domain, email: str, kind: str = "") -> None:
    """Raise LockedOut while the account or the client address is locked, whatever the password."""
    pipe = store.client().pipeline(transaction=False)
    for scope, subject, _ in _subjects(domain, email, kind):
        pipe.pttl(f"{PREFIX}:lock:{scope}:{subject}")
    wait_ms = max(pipe.execute())
    if wait_ms > 0:
        metrics.RATE_LIMITED.labels(reason="lockout").inc()
        raise LockedOut(math.ceil(wait_ms / 1000), "user code entries" if kind == "device" else "sign-in attempts")


def note_failure(domain: Domain, email: str, user: User | None, kind: str = "") -> None:
    """Count a failed password attempt; lock what reached its threshold, for a doubling time."""
    config = settings()
    client = store.client()
    for scope, subject, threshold in _subjects(domain, email, kind):
        key = f"{PREFIX}:failures:{scope}:{subject}"
        pipe = client.pipeline()
        pipe.incr(key)
        pipe.expire(key, config.failure_memory)
        failures = pipe.execute()[0]
        if threshold <= 0 or failures < threshold:
            continue
        doubled = config.lockout_base * 2 ** min(failures - threshold, 30)
        seconds = min(doubled, config.lockout_max)
        client.set(f"{PREFIX}:lock:{scope}:{subject}", failures, ex=max(1, seconds))
        if scope.endswith("account"):
            target = actors.of_user(user.id) if user is not None else None
        else:
            target = f"address:{subject}"
        audit.record(
            "account.locked",
            domain_id=domain.id,
            target=target,
            details={"scope": scope, "failures": failures, "seconds": seconds},
        )


def forget_failures(domain: Domain, email: str) -> None:
    """A successful sign-in clears the account's count (not the address's: one good account must
    not wipe the record of guesses at others)."""
    scope, subject, _ = _subjects(domain, email)[0]
    store.client().delete(f"{PREFIX}:failures:{scope}:{subject}")
