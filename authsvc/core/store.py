"""What the service keeps in Redis: the client, and the primitives a feature keeps its records with.

Each feature owns its record's type and key (authsvc.auth.session_record, authsvc.auth.mfa.pending,
authsvc.sso.flow_state, authsvc.sso.saml_flow's Handoff, authsvc.oauth.codes...). Still here: what
two packages share (JWKS copies: sso and oauth; the back-channel logout index: auth and
oauth). Every key lives under ``authsvc:`` and has a TTL. Keys are named by a digest of the
secret they stand for, so a copy of Redis holds no usable session id or code. Without
``REDIS_URL`` an in-process fakeredis stands in; it serves one process only, and
authsvc.core.store_snapshot may keep it across restarts.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, cast

import redis
from flask import Flask, current_app, has_request_context
from redis.backoff import NoBackoff
from redis.retry import Retry

from authsvc.core import redis_connection, security
from authsvc.core.request_state import state
from authsvc.core.settings import settings

log = logging.getLogger(__name__)

PREFIX = "authsvc:"


def is_embedded(app: Flask | None = None) -> bool:
    """Whether the store is the in-process one: neither ``REDIS_URL`` nor ``REDIS_SENTINELS`` is set."""
    return not (settings(app).redis_url or settings(app).redis_sentinels)


def init_app(app: Flask) -> None:
    url = settings(app).redis_url
    if settings(app).redis_sentinels:
        # The primary that Redis Sentinel names, found again after a failover (authsvc.core.redis_connection).
        client = redis_connection.sentinel_client(
            settings(app), _FailFast, decode_responses=True, health_check_interval=30
        )
    elif url:
        timeout = settings(app).redis_timeout
        # Short timeouts and one immediate retry (for a pooled connection that
        # went stale while Redis restarted): a dead Redis costs a request
        # milliseconds and a 503, not a hung worker.
        client = redis.Redis.from_url(
            url,
            decode_responses=True,
            health_check_interval=30,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1),
            connection_class=_fail_fast_class(url),
        )
    else:
        import fakeredis

        # No warning here: gunicorn's master gives it once a start (config/gunicorn.py), where
        # every worker and every flask command building the app would each repeat it.
        client = fakeredis.FakeRedis(decode_responses=True)
    app.extensions["authsvc.redis"] = client


class _FailFast:
    """A Redis connection that, once Redis timed out or refused within a request, is not tried again in it.

    A hung Redis costs a request one timeout (``AUTHSVC_REDIS_TIMEOUT``; the
    rate limiter, the lockout check and the session would otherwise each
    wait for their own), and the request answers 503 at once after it.
    Outside a request (the audit publisher's thread) every call tries.
    """

    def connect(self, *args: Any, **kwargs: Any) -> Any:
        return self._guard(super().connect, args, kwargs)  # type: ignore[misc]

    def send_packed_command(self, *args: Any, **kwargs: Any) -> Any:
        return self._guard(super().send_packed_command, args, kwargs)  # type: ignore[misc]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        return self._guard(super().read_response, args, kwargs)  # type: ignore[misc]

    @staticmethod
    def _guard(call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        in_request = has_request_context()
        if in_request and state().redis_unreachable:
            raise redis.ConnectionError("Redis did not answer earlier in this request; not tried again")
        try:
            return call(*args, **kwargs)
        except (redis.TimeoutError, redis.ConnectionError):
            if in_request:
                state().redis_unreachable = True
            raise


class _FailFastConnection(_FailFast, redis.Connection):
    pass


class _FailFastSSLConnection(_FailFast, redis.SSLConnection):
    pass


class _FailFastUnixConnection(_FailFast, redis.UnixDomainSocketConnection):
    pass


def _fail_fast_class(url: str) -> type:
    if url.startswith("rediss://"):
        return _FailFastSSLConnection
    if url.startswith("unix://"):
        return _FailFastUnixConnection
    return _FailFastConnection


def client() -> redis.Redis:
    return client_of(current_app)


def client_of(app: Flask) -> redis.Redis:
    return cast(redis.Redis, app.extensions["authsvc.redis"])


def _decoded(raw: Any) -> dict[str, Any] | None:
    # Any: redis-py types every reply "Awaitable | Any", one signature for its sync and async clients.
    return cast("dict[str, Any] | None", json.loads(raw) if raw else None)


def key(kind: str, secret: str) -> str:
    """The key of the ``kind`` record that ``secret`` stands for: named by its digest, never the secret."""
    return f"{PREFIX}{kind}:{security.digest(secret)}"


# The primitives a feature keeps its records with: JSON under ``key(kind, secret)``, with a TTL.
# Each feature owns its record's type and kind (as authsvc.auth.mfa.pending's PendingSignIn).


def put(kind: str, secret: str, data: dict[str, Any], ttl: int) -> None:
    client().set(key(kind, secret), json.dumps(data), ex=ttl)


def get(kind: str, secret: str) -> dict[str, Any] | None:
    raw = client().get(key(kind, secret))
    return _decoded(raw)


def take(kind: str, secret: str) -> dict[str, Any] | None:
    """The record, deleted as it is read: GETDEL is atomic, so of two concurrent takers exactly one gets it."""
    raw = client().getdel(key(kind, secret))
    return _decoded(raw)


def take_digest(kind: str, digest: str) -> dict[str, Any] | None:
    """``take`` by the secret's digest, for an index that keeps no secret (SAML's sessions of a NameID)."""
    raw = client().getdel(f"{PREFIX}{kind}:{digest}")
    return _decoded(raw)


def delete(kind: str, secret: str) -> None:
    client().delete(key(kind, secret))


def claim_once(name: str, ttl: int) -> bool:
    """Whether this caller is the first to claim ``name`` (SET NX, kept ``ttl`` seconds): one winner, across workers."""
    return bool(client().set(f"{PREFIX}{name}", "1", nx=True, ex=max(ttl, 1)))


# Keys fetched from a JWKS URL (an SSO provider's, an application's for private_key_jwt):
# refetched on an unknown kid at most once an interval, shared between workers.


def claim_jwks_refetch(provider_id: str, interval: int) -> bool:
    """Whether this caller may refetch ``provider_id``'s JWKS now (SET NX: one per interval, across workers)."""
    return bool(client().set(f"{PREFIX}jwks-refetch:{provider_id}", "1", nx=True, ex=interval))


def save_jwks(provider_id: str, url: str, jwks: dict[str, Any], ttl: int) -> None:
    """Share a refetched JWKS with the other workers, whose caches still hold the old one."""
    client().set(f"{PREFIX}jwks:{provider_id}:{security.digest(url)}", json.dumps(jwks), ex=ttl)


def load_jwks(provider_id: str, url: str) -> dict[str, Any] | None:
    raw = client().get(f"{PREFIX}jwks:{provider_id}:{security.digest(url)}")
    return _decoded(raw)


# Back-channel logout: which applications received an ID token in a sign-in
# session (named by its sid), and the sids of each user. Both live as long as
# a session can; ending a session takes its record, once, whoever ends it.


def _relying_parties_key(sid: str) -> str:
    return f"{PREFIX}sid-rps:{security.digest(sid)}"


def _user_sids_key(user_id: int) -> str:
    return f"{PREFIX}user-sids:{user_id}"


def remember_relying_party(sid: str, user_id: int, domain_id: int, issuer: str, application_id: int, ttl: int) -> None:
    """Note that ``application_id`` received an ID token in the session ``sid`` (of ``issuer``)."""
    key, user_key = _relying_parties_key(sid), _user_sids_key(user_id)
    pipe = client().pipeline(transaction=False)
    pipe.hset(
        key, mapping={"sid": sid, "user": user_id, "domain": domain_id, "iss": issuer, f"app:{application_id}": 1}
    )
    pipe.expire(key, ttl)
    pipe.sadd(user_key, sid)
    pipe.expire(user_key, ttl)
    pipe.execute()


def user_sids(user_id: int) -> list[str]:
    """The sids of ``user_id``'s sessions in which an application received an ID token."""
    return sorted(cast("set[str]", client().smembers(_user_sids_key(user_id))))


@dataclass(frozen=True)
class RelyingParties:
    """An ended session's record: the applications that received an ID token in it (back-channel logout)."""

    sid: str
    user: int
    domain: int
    iss: str
    applications: list[int]


def take_relying_parties(sid: str) -> RelyingParties | None:
    """The session ``sid``'s record, taken: one caller gets it."""
    key = _relying_parties_key(sid)
    pipe = client().pipeline()  # MULTI: read and delete together
    pipe.hgetall(key)
    pipe.delete(key)
    raw, _ = pipe.execute()
    if not raw:
        return None
    client().srem(_user_sids_key(int(raw["user"])), sid)
    return RelyingParties(
        sid=raw["sid"],
        user=int(raw["user"]),
        domain=int(raw["domain"]),
        iss=raw["iss"],
        applications=sorted(int(name[4:]) for name in raw if name.startswith("app:")),
    )
