"""Operations: liveness, readiness and metrics. None of them needs a domain."""

from __future__ import annotations

import hmac
import logging

from flask import Blueprint, Response, current_app, jsonify, request
from sqlalchemy import text

from authsvc.core import store
from authsvc.core.database import db
from authsvc.core.errors import REDIS_DOWN, json_error
from authsvc.core.headers import uncached
from authsvc.web import metrics

bp = Blueprint("health", __name__)
# Health and metrics describe this moment: nothing on the way may keep them.
bp.after_request(uncached)

log = logging.getLogger(__name__)


@bp.get("/healthz")
def healthz() -> Response:
    """The process is alive and serving; touches no dependency."""
    return jsonify(status="ok")


def _check_database() -> bool:
    try:
        db.session.execute(text("SELECT 1"))
        return True
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
        log.warning("readiness: database unreachable: %s", exc.__class__.__name__)
        db.session.rollback()
        return False
    finally:
        db.session.close()


def _check_redis() -> bool:
    try:
        return bool(store.client().ping())
    except REDIS_DOWN as exc:
        log.warning("readiness: Redis unreachable: %s", exc.__class__.__name__)
        return False


@bp.get("/readyz")
def readyz() -> Response:
    """Ready for traffic: the database and Redis both answer; else 503, saying which does not."""
    checks = {
        "database": "ok" if _check_database() else "unreachable",
        "redis": "ok" if _check_redis() else "unreachable",
    }
    ready = all(value == "ok" for value in checks.values())
    response = jsonify(status="ready" if ready else "unavailable", checks=checks)
    if not ready:
        response.status_code = 503
        response.headers["Retry-After"] = str(current_app.config["AUTHSVC_RETRY_AFTER"])
    return response


@bp.get("/metrics")
def prometheus_metrics() -> Response:
    """Prometheus text exposition, summed over every worker; behind a bearer token when one is configured."""
    expected = current_app.config.get("AUTHSVC_METRICS_TOKEN")
    if expected:
        header = request.headers.get("Authorization", "")
        if not hmac.compare_digest(header.encode(), f"Bearer {expected}".encode()):
            return json_error(
                401, "invalid_token", "A valid metrics token is needed.", {"WWW-Authenticate": 'Bearer realm="metrics"'}
            )
    body, content_type = metrics.exposition()
    return Response(body, content_type=content_type)
