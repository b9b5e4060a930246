"""Failed client authentications counted against the client_id they named (authsvc.app.limits counts the rest).

Only after the view is a failure known, so this rate is not one of Flask-Limiter's declared limits
(those are checked before the view, and this one must never refuse the client's correctly
authenticated requests). It counts failures only, and past the rate refuses failures only: an
attacker spread over many addresses, each under its own rate of unauthenticated requests, meets it,
while the client does not (docs/security.md, "Rate limits").
"""

from __future__ import annotations

import logging
import math
import time

from flask import Flask, Response, current_app
from flask_limiter import Limiter
from limits import parse

from authsvc.app.limits import authenticates_client, client_authenticating_blueprints, requesting_client
from authsvc.core.errors import too_many_requests
from authsvc.core.settings import settings
from authsvc.oauth import clients
from authsvc.web import metrics

log = logging.getLogger(__name__)

_RATE = "authsvc.limiter.failures_per_client"
_SCOPE = "client-failure-client"


def init_app(app: Flask) -> None:
    """After authsvc.app.limits.init_app: this hook runs after the limiter's (hooks run last registered, first),
    so that a failure refused here has been counted against its address too."""
    app.extensions[_RATE] = parse(settings(app).client_failure_client_rate_limit)
    for blueprint in client_authenticating_blueprints(app):
        app.after_request_funcs.setdefault(blueprint, []).insert(0, _refuse_failures_past_the_client_rate)


def _refuse_failures_past_the_client_rate(response: Response) -> Response:
    """Count a failed client authentication against the client_id it named; past the rate, answer 429."""
    if not authenticates_client() or clients.client_authenticated() is not False:
        return response
    limiter: Limiter = current_app.extensions["authsvc.limiter"]
    rate = current_app.extensions[_RATE]
    key = requesting_client()
    try:
        if limiter.limiter.hit(rate, key, _SCOPE):
            return response
        reset_at = limiter.limiter.get_window_stats(rate, key, _SCOPE).reset_time
    except Exception:  # noqa: BLE001 - as the limiter's own (swallow_errors): never fail a request over its count
        log.exception("could not count a failed client authentication")
        return response
    metrics.RATE_LIMITED.labels(reason="rate_limit").inc()
    wait = max(1, math.ceil(reset_at - time.time()))
    return too_many_requests(
        "rate_limited", f"Too many failed client authentications (at most {rate}). Retry in {wait} s.", wait
    )
