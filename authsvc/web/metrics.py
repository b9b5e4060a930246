"""Prometheus metrics, served at ``/metrics``.

Under gunicorn every worker is a process of its own: ``config/gunicorn.py``
sets ``PROMETHEUS_MULTIPROC_DIR`` before the workers start, each worker writes
its samples there, and ``/metrics`` adds up every worker's (prometheus-client's
multiprocess mode), so the numbers do not depend on which worker answers.
"""

from __future__ import annotations

import os
import time

from flask import Flask, Response, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

from authsvc.core.request_state import state

REQUESTS = Counter(
    "authsvc_http_requests", "HTTP requests answered, by endpoint, method and status.", ["endpoint", "method", "status"]
)
LATENCY = Histogram(
    "authsvc_http_request_duration_seconds",
    "Time from the request reaching the app to its answer, by endpoint.",
    ["endpoint"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
TOKENS_ISSUED = Counter("authsvc_tokens_issued", "Access tokens issued, by grant type.", ["grant_type"])
SIGNIN_FAILURES = Counter("authsvc_signin_failures", "Failed password sign-ins, by where they came in.", ["via"])
SHED = Counter("authsvc_shed_requests", "Requests answered 503 at once: they had waited too long for a worker.")
RATE_LIMITED = Counter(
    "authsvc_rate_limited", "Requests refused with 429: over a rate limit, or during a lockout.", ["reason"]
)


def _endpoint() -> str:
    # Endpoint names, not paths: a scan of random URLs must not create a series per path.
    return request.endpoint or "unmatched"


def init_app(app: Flask) -> None:
    @app.before_request
    def start_clock() -> None:
        state().started = time.perf_counter()

    @app.after_request
    def count(response: Response) -> Response:
        endpoint = _endpoint()
        REQUESTS.labels(endpoint=endpoint, method=request.method, status=str(response.status_code)).inc()
        started = state().started
        if started is not None:
            LATENCY.labels(endpoint=endpoint).observe(time.perf_counter() - started)
        return response


def exposition() -> tuple[bytes, str]:
    """The text exposition of every metric: summed over all workers in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return generate_latest(registry), CONTENT_TYPE_LATEST
