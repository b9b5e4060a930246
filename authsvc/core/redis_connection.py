"""How the service reaches Redis: one server (``REDIS_URL``), or the primary that Redis Sentinel names.

With ``REDIS_SENTINELS`` every connection is made through redis-py's
``Sentinel.master_for``: before connecting, the pool asks the Sentinels for
the current primary, so after a failover new connections go to the promoted
replica by themselves, and a connection still open to a demoted primary
fails with ``ReadOnlyError`` and is dropped (redis-py). ``REDIS_URL``, when
given with Sentinels, still gives the database number, the username and
password and ``rediss`` (TLS); its host is ignored.

The time spent asking Sentinels is bounded as a whole: each Sentinel gets
its share of ``AUTHSVC_REDIS_TIMEOUT`` and none is asked once it has passed,
so a hung Sentinel costs one share, not a full timeout per Sentinel asked.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote, urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import (
    MasterNotFoundError,
    Sentinel,
    SentinelManagedConnection,
    SentinelManagedSSLConnection,
)

if TYPE_CHECKING:
    from config.settings import Settings


class BoundedSentinel(Sentinel):
    """redis-py's Sentinel, whose search for the primary ends within one overall deadline."""

    def __init__(self, sentinels: list[tuple[str, int]], budget: float, **kwargs: Any) -> None:
        super().__init__(sentinels, **kwargs)
        self.budget = budget

    def discover_master(self, service_name: str) -> tuple[str, int]:
        deadline = time.monotonic() + self.budget
        errors = []
        for number, sentinel in enumerate(list(self.sentinels)):
            if time.monotonic() >= deadline:
                errors.append("the time for asking Sentinels ran out")
                break
            try:
                masters = sentinel.sentinel_masters()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                errors.append(f"{_address(sentinel)}: {exc.__class__.__name__}")
                continue
            state = masters.get(service_name)
            if state and self.check_master_state(state, service_name):
                # The Sentinel that answered is asked first next time (as redis-py does).
                self.sentinels[0], self.sentinels[number] = sentinel, self.sentinels[0]
                return state["ip"], int(state["port"])
            errors.append(f"{_address(sentinel)}: no primary for the service")
        raise MasterNotFoundError(f"no Redis primary found for {service_name!r} ({'; '.join(errors)})")


class _AskOnce:
    """Connect once: redis-py's connection retry would ask the Sentinels a second time, doubling the bound."""

    def connect(self) -> None:
        self._connect_retry()  # type: ignore[attr-defined]


def _address(client: redis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"{kwargs.get('host')}:{kwargs.get('port')}"


def url_options(url: str | None) -> dict[str, Any]:
    """What ``REDIS_URL`` gives beside Sentinels: database, username, password, TLS."""
    if not url:
        return {}
    parts = urlsplit(url)
    options: dict[str, Any] = {}
    path = parts.path.lstrip("/")
    if path:
        options["db"] = int(path)
    if parts.username:
        options["username"] = unquote(parts.username)
    if parts.password:
        options["password"] = unquote(parts.password)
    return options


def sentinel_client(settings: Settings, fail_fast: type, **options: Any) -> redis.Redis:
    """A client of the primary the Sentinels name, its connections made of ``fail_fast`` and redis-py's."""
    sentinels = settings.redis_sentinels or []
    timeout = settings.redis_timeout
    url = settings.redis_url
    tls = bool(url and url.startswith("rediss://"))
    # Each Sentinel's share of the whole: connecting and answering both end within it.
    share = timeout / len(sentinels)
    # No retries: redis-py's default (three, with backoff) would multiply a hung Sentinel's share.
    sentinel_kwargs: dict[str, Any] = {
        "socket_timeout": share,
        "socket_connect_timeout": share,
        "retry": Retry(NoBackoff(), 0),
    }
    if settings.redis_sentinel_password:
        sentinel_kwargs["password"] = settings.redis_sentinel_password
    manager = BoundedSentinel(sentinels, budget=timeout, sentinel_kwargs=sentinel_kwargs)
    base = SentinelManagedSSLConnection if tls else SentinelManagedConnection
    connection_class = type(f"FailFast{base.__name__}", (fail_fast, _AskOnce, base), {})
    client = manager.master_for(
        settings.redis_sentinel_service,
        connection_class=connection_class,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 1),
        **url_options(url),
        **options,
    )
    client.authsvc_sentinel = manager
    return cast(redis.Redis, client)


def server_in_use(client: Any) -> str | None:
    """host:port of the Redis server ``client`` talks to (the primary, with Sentinels), or None (embedded)."""
    pool = getattr(client, "connection_pool", None)
    if pool is None or not hasattr(pool, "connection_kwargs"):
        return None
    address = getattr(pool, "master_address", None)
    if address is not None:
        return f"{address[0]}:{address[1]}"
    kwargs = pool.connection_kwargs
    if "host" not in kwargs or kwargs.get("connection_pool") is not None:
        return None
    return f"{kwargs['host']}:{kwargs.get('port', 6379)}"
