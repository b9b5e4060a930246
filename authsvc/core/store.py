"""What the service keeps in Redis: sessions, authorisation codes and SSO flow state.

Every key lives under ``authsvc:`` and has a TTL. Keys are named by a digest
of the secret they stand for, so a copy of Redis holds no usable session id or
code. Without ``REDIS_URL`` an in-process fakeredis stands in; it serves one
process only.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, cast

import redis
from flask import Flask, current_app, g, has_request_context
from redis.backoff import NoBackoff
from redis.retry import Retry

from authsvc.core import redis_connection, security
from authsvc.core.settings import settings

log = logging.getLogger(__name__)

PREFIX = "authsvc:"


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

        log.warning(
            "REDIS_URL is not set: using an in-process store that serves this process only. "
            "Sessions and codes are lost on restart and not shared between workers."
        )
        client = fakeredis.FakeRedis(decode_responses=True)
    app.extensions["authsvc.redis"] = client


# Where a request notes that Redis did not answer it.
_UNREACHABLE = "authsvc_redis_unreachable"


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
        if in_request and g.get(_UNREACHABLE):
            raise redis.ConnectionError("Redis did not answer earlier in this request; not tried again")
        try:
            return call(*args, **kwargs)
        except (redis.TimeoutError, redis.ConnectionError):
            if in_request:
                g.setdefault(_UNREACHABLE, True)
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
    return cast(redis.Redis, current_app.extensions["authsvc.redis"])


def _decoded(raw: Any) -> dict[str, Any] | None:
    # Any: redis-py types every reply "Awaitable | Any", one signature for its sync and async clients.
    return cast("dict[str, Any] | None", json.loads(raw) if raw else None)


def _put(kind: str, secret: str, data: dict[str, Any], ttl: int) -> None:
    client().set(f"{PREFIX}{kind}:{security.digest(secret)}", json.dumps(data), ex=ttl)


def _get(kind: str, secret: str) -> dict[str, Any] | None:
    raw = client().get(f"{PREFIX}{kind}:{security.digest(secret)}")
    return _decoded(raw)


def _take(kind: str, secret: str) -> dict[str, Any] | None:
    # GETDEL is atomic: of two concurrent claims of one code, exactly one wins.
    raw = client().getdel(f"{PREFIX}{kind}:{security.digest(secret)}")
    return _decoded(raw)


def _delete(kind: str, secret: str) -> None:
    client().delete(f"{PREFIX}{kind}:{security.digest(secret)}")


# Sessions: the ``user`` cookie holds the session id.


def create_session(
    user_id: int,
    domain_id: int,
    ttl: int,
    amr: list[str] | None = None,
    auth_time: int | None = None,
    extra: dict[str, Any] | None = None,
) -> str:
    """Start a new session and return its id; ids are never reused.

    ``sid`` is the session's public name in ID tokens (OpenID Connect): never
    the id itself, which the cookie carries as a bearer secret. ``amr`` names
    how the user signed in (``pwd``, ``fed``), ``auth_time`` when (seconds;
    a session that replaces one without a sign-in keeps the old one's);
    ``extra`` is kept beside them (``saml``: the sign-in's NameID and
    SessionIndex, for Single Logout).
    """
    session_id = security.new_secret()
    created = int(time.time() * 1000)
    record = {
        "user": user_id,
        "domain": domain_id,
        "created": created,
        "sid": security.new_secret(),
        "amr": amr or ["pwd"],
        "auth_time": auth_time if auth_time is not None else created // 1000,
        **(extra or {}),
    }
    _put("session", session_id, record, ttl)
    return session_id


def get_session(session_id: str) -> dict[str, Any] | None:
    return _get("session", session_id)


def delete_session(session_id: str) -> None:
    _delete("session", session_id)


def take_session(session_id: str) -> dict[str, Any] | None:
    """End the session and return its record (None if it was already gone)."""
    return _take("session", session_id)


def take_session_named(session_digest: str) -> dict[str, Any] | None:
    """End the session whose id has the digest ``session_digest`` (all an index may hold) and return its record."""
    raw = client().getdel(f"{PREFIX}session:{session_digest}")
    return _decoded(raw)


# Authorisation codes: single use, short-lived.


def save_code(code: str, data: dict[str, Any], ttl: int) -> None:
    _put("code", code, data, ttl)


def claim_code(code: str, family: str, spent_ttl: int) -> dict[str, Any] | None:
    """Take the code's data, once, leaving in its place the ``family`` its tokens will join.

    One transaction: whoever finds the code gone finds the spent marker, so a
    replay always learns which family to revoke. A second claim returns None.
    """
    digest = security.digest(code)
    code_key, spent_key = f"{PREFIX}code:{digest}", f"{PREFIX}spent-code:{digest}"
    # One round trip, atomic (MULTI/EXEC): of two concurrent claims exactly one gets the code (GETDEL),
    # and the marker is there the moment the code is gone. NX keeps the first claim's family.
    pipe = client().pipeline(transaction=True)
    pipe.getdel(code_key)
    pipe.set(spent_key, family, ex=spent_ttl, nx=True)
    raw, marked = pipe.execute()
    if raw is None and marked:
        # No such code: it leaves no marker behind (an unknown code has no tokens to revoke).
        client().delete(spent_key)
    return _decoded(raw)


def spent_code_family(code: str) -> str | None:
    return cast("str | None", client().get(f"{PREFIX}spent-code:{security.digest(code)}"))


def record_code_replay(code: str, ttl: int) -> None:
    """Note that a spent code was presented again: the exchange that spent it checks after saving its tokens."""
    client().set(f"{PREFIX}replayed-code:{security.digest(code)}", "1", ex=ttl)


def code_replayed(code: str) -> bool:
    return bool(client().exists(f"{PREFIX}replayed-code:{security.digest(code)}"))


# SSO flow state: single use, ten minutes. Each flow is also listed under the
# address that started it (its holder), with its expiry, so that limits can
# bound how many one address holds; claiming a flow takes it off the list.


def _held_key(holder: str) -> str:
    return f"{PREFIX}sso-held:{holder}"


def save_flow_state(state: str, data: dict[str, Any], ttl: int, holder: str) -> None:
    key, held = security.digest(state), _held_key(holder)
    pipe = client().pipeline()
    pipe.set(f"{PREFIX}sso:{key}", json.dumps({**data, "holder": holder}), ex=ttl)
    pipe.zadd(held, {key: time.time() + ttl})
    pipe.expire(held, ttl)
    pipe.execute()


def claim_flow_state(state: str) -> dict[str, Any] | None:
    flow = _take("sso", state)
    if flow is not None and flow.get("holder"):
        client().zrem(_held_key(flow["holder"]), security.digest(state))
    return flow


def held_flow_states(holder: str) -> tuple[int, float]:
    """How many unexpired flows ``holder`` started and nobody claimed, and when the first expires."""
    held = _held_key(holder)
    pipe = client().pipeline()
    pipe.zremrangebyscore(held, "-inf", time.time())
    pipe.zcard(held)
    pipe.zrange(held, 0, 0, withscores=True)
    _, count, first = pipe.execute()
    return count, first[0][1] if first else time.time()


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


# private_key_jwt (RFC 7523 3): a client assertion's jti is accepted once, kept until the assertion expires.


def claim_assertion_jti(client_id: str, jti: str, ttl: int) -> bool:
    """Whether this is the first use of ``jti`` by ``client_id`` (SET NX: one winner, across workers)."""
    key = f"{PREFIX}assertion-jti:{security.digest(f'{client_id} {jti}')}"
    return bool(client().set(key, "1", nx=True, ex=max(ttl, 1)))


# DPoP (RFC 9449, authsvc.api.proofs): each proof's jti once per target URI; the server's nonces.


def claim_dpop_jti(target_jti: str, ttl: int, nonce_lifetime: int | None) -> tuple[bool, str | None, set[str]]:
    """Claim a proof's ``jti`` (SET NX) and, with ``nonce_lifetime``, read the nonces: one round trip.

    Returns whether this was the jti's first use, the current nonce (made by
    the first request of its window, on whichever instance) and the nonces
    accepted now: the current window's and the previous one's.
    """
    pipe = client().pipeline(transaction=False)
    pipe.set(f"{PREFIX}dpop-jti:{security.digest(target_jti)}", "1", nx=True, ex=max(ttl, 1))
    if nonce_lifetime:
        window = int(time.time()) // nonce_lifetime
        current_key, previous_key = f"{PREFIX}dpop-nonce:{window}", f"{PREFIX}dpop-nonce:{window - 1}"
        # Of two instances starting a window at once, the first SET NX wins and both read its nonce.
        pipe.set(current_key, security.new_secret(), nx=True, ex=2 * nonce_lifetime + 5)
        pipe.mget(current_key, previous_key)
    results = pipe.execute()
    if not nonce_lifetime:
        return bool(results[0]), None, set()
    current, previous = results[2]
    return bool(results[0]), current, {n for n in (current, previous) if n}


# Multi-factor sign-in: what is known between a correct password and the second factor.


def save_mfa_pending(token: str, data: dict[str, Any], ttl: int) -> None:
    _put("mfa", token, data, ttl)


def get_mfa_pending(token: str) -> dict[str, Any] | None:
    return _get("mfa", token)


def take_mfa_pending(token: str) -> dict[str, Any] | None:
    """Claim the pending sign-in once: of two concurrent completions, one wins."""
    return _take("mfa", token)


def save_webauthn_challenge(holder: str, challenge: str, ttl: int) -> None:
    """The challenge of a passkey ceremony that ``holder`` (a session, a pending sign-in) started."""
    _put("webauthn", holder, {"challenge": challenge}, ttl)


def take_webauthn_challenge(holder: str) -> str | None:
    """The challenge, once: a ceremony's answer is checked against it a single time."""
    record = _take("webauthn", holder)
    return record["challenge"] if record else None


# SAML: a flow is read at the ACS before it is claimed (the response must first
# prove it answers the flow's request); a verified sign-in waits for the
# browser's top-level GET; assertion ids are kept until they expire.


def peek_flow_state(state: str) -> dict[str, Any] | None:
    return _get("sso", state)


def claim_saml_assertion(provider_id: str, assertion_id: str, ttl: int) -> bool:
    """Whether this is the first time ``assertion_id`` is presented (SET NX, kept ``ttl`` seconds)."""
    key = f"{PREFIX}saml-seen:{provider_id}:{security.digest(assertion_id)}"
    return bool(client().set(key, "1", nx=True, ex=max(1, ttl)))


def save_saml_handoff(handoff: str, data: dict[str, Any], ttl: int) -> None:
    _put("saml-handoff", handoff, data, ttl)


def claim_saml_handoff(handoff: str) -> dict[str, Any] | None:
    return _take("saml-handoff", handoff)


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


def take_relying_parties(sid: str) -> dict[str, Any] | None:
    """The session's record (``sid``, ``user``, ``domain``, ``iss``, ``applications``), taken: one caller gets it."""
    key = _relying_parties_key(sid)
    pipe = client().pipeline()  # MULTI: read and delete together
    pipe.hgetall(key)
    pipe.delete(key)
    raw, _ = pipe.execute()
    if not raw:
        return None
    client().srem(_user_sids_key(int(raw["user"])), sid)
    return {
        "sid": raw["sid"],
        "user": int(raw["user"]),
        "domain": int(raw["domain"]),
        "iss": raw["iss"],
        "applications": sorted(int(name[4:]) for name in raw if name.startswith("app:")),
    }
