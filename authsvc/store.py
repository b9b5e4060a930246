"""What the service keeps in Redis: sessions and authorisation codes.

Every key lives under ``authsvc:`` and has a TTL. Keys are named by a digest
of the secret they stand for, so a copy of Redis holds no usable session id or
code. Without ``REDIS_URL`` an in-process fakeredis stands in; it serves one
process only.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import redis
from flask import Flask, current_app, g, has_request_context
from redis.backoff import NoBackoff
from redis.retry import Retry

from authsvc import security

log = logging.getLogger(__name__)

PREFIX = "authsvc:"


def init_app(app: Flask) -> None:
    url = app.config.get("REDIS_URL")
    if url:
        timeout = app.config["AUTHSVC_REDIS_TIMEOUT"]
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
    return current_app.extensions["authsvc.redis"]


def _put(kind: str, secret: str, data: dict[str, Any], ttl: int) -> None:
    client().set(f"{PREFIX}{kind}:{security.digest(secret)}", json.dumps(data), ex=ttl)


def _get(kind: str, secret: str) -> dict[str, Any] | None:
    raw = client().get(f"{PREFIX}{kind}:{security.digest(secret)}")
    return json.loads(raw) if raw else None


def _take(kind: str, secret: str) -> dict[str, Any] | None:
    # GETDEL is atomic: of two concurrent claims of one code, exactly one wins.
    raw = client().getdel(f"{PREFIX}{kind}:{security.digest(secret)}")
    return json.loads(raw) if raw else None


def _delete(kind: str, secret: str) -> None:
    client().delete(f"{PREFIX}{kind}:{security.digest(secret)}")


# Sessions: the ``user`` cookie holds the session id.


def create_session(user_id: int, domain_id: int, ttl: int) -> str:
    """Start a new session and return its id; ids are never reused."""
    session_id = security.new_secret()
    _put("session", session_id, {"user": user_id, "domain": domain_id, "created": int(time.time() * 1000)}, ttl)
    return session_id


def get_session(session_id: str) -> dict[str, Any] | None:
    return _get("session", session_id)


def delete_session(session_id: str) -> None:
    _delete("session", session_id)


# Authorisation codes: single use, short-lived.


def save_code(code: str, data: dict[str, Any], ttl: int) -> None:
    _put("code", code, data, ttl)


def claim_code(code: str) -> dict[str, Any] | None:
    """Take the code's data, once. A second claim returns None."""
    return _take("code", code)


def remember_spent_code(code: str, family: str, ttl: int) -> None:
    """Remember which token family a spent code produced, to revoke it on replay."""
    client().set(f"{PREFIX}spent-code:{security.digest(code)}", family, ex=ttl)


def spent_code_family(code: str) -> str | None:
    return client().get(f"{PREFIX}spent-code:{security.digest(code)}")


# SSO flow state: single use, ten minutes.


def save_flow_state(state: str, data: dict[str, Any], ttl: int) -> None:
    _put("sso", state, data, ttl)


def claim_flow_state(state: str) -> dict[str, Any] | None:
    return _take("sso", state)
