"""Errors are values with an RFC 6749 shape, raised once and rendered by one handler (authsvc.app.errors)."""

from __future__ import annotations

from typing import Any

import redis.exceptions
from flask import Response, jsonify

from authsvc.core.headers import uncached
from authsvc.core.settings import settings

# What "the session store is down" looks like to redis-py: refused, reset,
# timed out, still loading after a restart, or a replica after a failover.
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.ReadOnlyError)


class ApiError(Exception):
    """An error answered as ``{"error", "error_description"}`` JSON (plus ``extra`` fields)."""

    def __init__(
        self,
        status: int,
        error: str,
        description: str,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ):
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.headers = headers or {}
        self.extra = extra or {}


def json_error(
    status: int,
    error: str,
    description: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Response:
    response = jsonify(error=error, error_description=description, **(extra or {}))
    response.status_code = status
    uncached(response)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def too_many_requests(error: str, description: str, retry_after: int) -> Response:
    """429 with the wait in ``Retry-After`` and in the body, for clients that read only one."""
    retry_after = max(1, int(retry_after))
    return json_error(429, error, description, {"Retry-After": str(retry_after)}, {"retry_after": retry_after})


def unavailable(description: str) -> Response:
    """503 for a dependency that is down: the client may retry, and is told when."""
    retry_after = str(settings().retry_after)
    return json_error(503, "temporarily_unavailable", description, {"Retry-After": retry_after})
