"""Operations: liveness, readiness and metrics. None of them needs a domain.

Readiness names the servers in use to a system admin's credential only; ``/metrics`` may be kept
behind ``AUTHSVC_METRICS_TOKEN`` (docs/operations.md#logs-health-and-metrics).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from sqlalchemy import text

from authsvc.core import redis_connection, store
from authsvc.core.database import db
from authsvc.core.errors import REDIS_DOWN, json_error
from authsvc.core.headers import uncached
from authsvc.core.policy import unbudgeted
from authsvc.core.settings import settings
from authsvc.web import metrics

# The health checks bound their own waits.
bp = unbudgeted(Blueprint("health", __name__))
# Health and metrics describe this moment: nothing on the way may keep them.
bp.after_request(uncached)
# app.extensions' key of the rule show_servers_to sets.
_SERVERS_SHOWN_TO = "authsvc.readyz_servers_shown_to"

log = logging.getLogger(__name__)


@bp.get("/healthz")
def healthz() -> Response:
    """The process is alive and serving; touches no dependency."""
    return jsonify(status="ok")


def _check_database() -> tuple[bool, str | None]:
    """Whether the database answers as a primary (writable), and its host:port when it is PostgreSQL."""
    try:
        connection = db.session.connection()
        if connection.dialect.name != "postgresql":
            connection.execute(text("SELECT 1"))
            return True, None
        # A standby answers SELECT 1 too: only a primary takes the service's writes.
        in_recovery = connection.execute(text("SELECT pg_is_in_recovery()")).scalar()
        info = connection.connection.dbapi_connection.info  # type: ignore[union-attr]
        server = f"{info.host}:{info.port}"
        if in_recovery:
            log.warning("readiness: the database at %s is a standby (read-only); reconnecting", server)
            # Its pooled connections lead to the standby: new ones find the primary (target_session_attrs).
            connection.invalidate()
            db.engine.pool.dispose()
            return False, server
        return True, server
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
        log.warning("readiness: database unreachable: %s", exc.__class__.__name__)
        db.session.rollback()
        return False, None
    finally:
        db.session.close()


def _check_redis() -> tuple[bool, str | None]:
    client = store.client()
    try:
        ok = bool(client.ping())
    except REDIS_DOWN as exc:
        log.warning("readiness: Redis unreachable: %s", exc.__class__.__name__)
        ok = False
    # Only host and port: never the URL, which may carry a password.
    return ok, None if store.is_embedded() else redis_connection.server_in_use(client)


def show_servers_to(app: Flask, caller_qualifies: Callable[[], bool]) -> None:
    """Who sees readyz's ``servers``: the request's caller when ``caller_qualifies()`` (a system admin).

    That rule is the admin package's, above this one: authsvc.app.blueprints passes it in.
    """
    app.extensions[_SERVERS_SHOWN_TO] = caller_qualifies


def _servers_shown(database_ok: bool) -> bool:
    caller_qualifies = current_app.extensions.get(_SERVERS_SHOWN_TO)
    # The caller's credential is read from the database: without one that answers, nobody qualifies.
    if not database_ok or caller_qualifies is None:
        return False
    try:
        return bool(caller_qualifies())
    except REDIS_DOWN:  # a DPoP proof's replay check needs Redis: the caller is then unknown, not an error
        return False


@bp.get("/readyz")
def readyz() -> Response:
    """Ready for traffic: the database (a primary) and Redis both answer; else 503, saying which does not.

    For a system admin's credential, ``servers`` names the PostgreSQL and Redis server (host:port) in use:
    after a failover, the new primaries. Anyone else learns no host: where the servers are helps an attack.
    """
    database_ok, database_server = _check_database()
    redis_ok, redis_server = _check_redis()
    # The embedded store (no REDIS_URL) is named for what it is: "ok" would claim a Redis that is not there.
    redis_state = ("in-process" if store.is_embedded() else "ok") if redis_ok else "unreachable"
    checks = {"database": "ok" if database_ok else "unreachable", "redis": redis_state}
    ready = database_ok and redis_ok
    body: dict[str, object] = {"status": "ready" if ready else "unavailable", "checks": checks}
    if _servers_shown(database_ok):
        body["servers"] = {"database": database_server, "redis": redis_server}
    response = jsonify(body)
    if not ready:
        response.status_code = 503
        response.headers["Retry-After"] = str(settings().retry_after)
    return response


@bp.get("/metrics")
def prometheus_metrics() -> Response:
    """Prometheus text exposition, summed over every worker; behind a bearer token when one is configured."""
    expected = settings().metrics_token
    if expected:
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        # The scheme is case-insensitive (RFC 9110 11.1), spaces may follow it (RFC 6750 2.1), as
        # authsvc.api.lookup reads any token; the token is compared in constant time.
        if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), expected.encode()):
            return json_error(
                401, "invalid_token", "A valid metrics token is needed.", {"WWW-Authenticate": 'Bearer realm="metrics"'}
            )
    body, content_type = metrics.exposition()
    return Response(body, content_type=content_type)
