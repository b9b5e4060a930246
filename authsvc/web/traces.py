"""OpenTelemetry traces (docs/operations.md#traces), when the standard environment asks for them.

``init_app`` does nothing, and imports nothing of OpenTelemetry, unless an
``OTEL_`` variable is set (and ``OTEL_SDK_DISABLED`` is not true). Then the SDK
reads that environment (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME,
OTEL_TRACES_SAMPLER, ...) and exports over OTLP/HTTP. Every request is a
span (Flask's instrumentation: it continues an incoming W3C ``traceparent``),
with child spans for SQL, Redis and outbound HTTP (their instrumentation
packages; ``requests`` sends ``traceparent`` on) and bcrypt (a span of our
own, authsvc.core.tracing). A request's span names its route, domain host,
client id, grant type and status, never a token, secret, code, password or
cookie: URL query strings are cut from every span before it is exported, as
the code exchange carries the code there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from flask import Flask

# Span attributes that hold a URL or its query, under the old and the stable HTTP conventions.
URL_ATTRIBUTES = ("http.url", "http.target", "url.full")
QUERY_ATTRIBUTES = ("url.query",)


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether the environment asks for OpenTelemetry: any OTEL_ variable, unless the SDK is disabled."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(name.startswith("OTEL_") for name in environ)


def init_app(app: Flask) -> None:
    """Trace the requests Flask serves (authsvc.create_app calls it before the middlewares wrap Flask)."""
    if not wanted(os.environ):
        return
    from authsvc.web import traces_sdk  # OpenTelemetry itself: only here

    traces_sdk.start(app)


def init_database(app: Flask) -> None:
    """Trace the SQL statements of ``app``'s engines (once they are made)."""
    if not wanted(os.environ):
        return
    from authsvc.web import traces_sdk

    traces_sdk.trace_database(app)
