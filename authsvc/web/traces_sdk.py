"""OpenTelemetry's SDK and instrumentation, set up for ``authsvc.web.traces`` (imported only when wanted)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from flask import Flask, request
from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.flask import FlaskInstrumentor
from opentelemetry.instrumentation.redis import RedisInstrumentor
from opentelemetry.instrumentation.requests import RequestsInstrumentor
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.instrumentation.wsgi import collect_request_attributes, wsgi_getter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from authsvc.core import tracing
from authsvc.core.database import db
from authsvc.web.traces import QUERY_ATTRIBUTES, URL_ATTRIBUTES

_provider: TracerProvider | None = None


class WithoutQueries(SpanExporter):
    """Exports spans with every URL's query string cut off (a code, a token may travel there)."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.exporter.export([_without_query(span) for span in spans])

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)


def _without_query(span: ReadableSpan) -> ReadableSpan:
    attributes = dict(span.attributes or {})
    changed = False
    for name in URL_ATTRIBUTES:
        value = attributes.get(name)
        if isinstance(value, str) and "?" in value:
            attributes[name], changed = value.split("?", 1)[0], True
    for name in QUERY_ATTRIBUTES:
        if attributes.pop(name, None) is not None:
            changed = True
    if not changed:
        return span
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _request_attributes(span: Any, environ: dict[str, Any]) -> None:
    """The request's domain host; its client id and grant type are added with the answer (a form is read then).
    The trace id is kept in the environ for the access log line, written once the span has ended."""
    context = span.get_span_context()
    if context.is_valid:
        environ[tracing.ENVIRON_KEY] = format(context.trace_id, "032x")
    if span.is_recording():
        span.set_attribute("authsvc.domain", (environ.get("HTTP_HOST") or "").split(":")[0][:253])


def _response_attributes(span: Any, status: str, headers: list[tuple[str, str]]) -> None:
    if not span.is_recording():
        return
    values = request.values if request.mimetype in ("", "application/x-www-form-urlencoded") else request.args
    for field, attribute in (("client_id", "authsvc.client_id"), ("grant_type", "authsvc.grant_type")):
        value = values.get(field)
        if value:
            span.set_attribute(attribute, value[:200])


def _span(name: str) -> AbstractContextManager[Any]:
    return trace.get_tracer("authsvc").start_as_current_span(name)


def _served(environ: dict[str, Any], route: str, status: str, started: float) -> None:
    """A server span for a request Flask never saw, timed after the fact (the fast path is not slowed
    by a span it may not need: it can still pass the request on to Flask, which makes its own)."""
    end = time.time_ns()
    start = end - int((time.perf_counter() - started) * 1e9)
    span = trace.get_tracer("authsvc").start_span(
        f"{environ.get('REQUEST_METHOD', 'GET')} {route}",
        context=propagate.extract(environ, getter=wsgi_getter),
        kind=trace.SpanKind.SERVER,
        start_time=start,
    )
    if span.is_recording():
        span.set_attributes(collect_request_attributes(environ))
        span.set_attribute("http.route", route)
        span.set_attribute("http.status_code", int(status.split(" ", 1)[0]))
        span.set_attribute("authsvc.domain", (environ.get("HTTP_HOST") or "").split(":")[0][:253])
    context = span.get_span_context()
    if context.is_valid:
        environ[tracing.ENVIRON_KEY] = format(context.trace_id, "032x")
    span.end(end_time=end)


def _trace_id() -> str | None:
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def start(app: Flask) -> None:
    """Trace ``app``'s requests and what they call; the process's provider and exporter are made once.

    Flask's instrumentation wraps ``app.wsgi_app`` as it is now: called before the middlewares are put
    in front of it (authsvc.create_app), so that what they answer themselves (inspect's fast path, an
    overloaded worker's 503) pays nothing for it; a request's span starts in Flask's before_request.
    """
    global _provider
    if _provider is None:
        _provider = TracerProvider()  # its resource and sampler from OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, ...
        _provider.add_span_processor(BatchSpanProcessor(WithoutQueries(OTLPSpanExporter())))
        trace.set_tracer_provider(_provider)
        RedisInstrumentor().instrument()
        RequestsInstrumentor().instrument()
        tracing.install(_span, _trace_id, _served)
    FlaskInstrumentor().instrument_app(app, request_hook=_request_attributes, response_hook=_response_attributes)


def trace_database(app: Flask) -> None:
    """SQL statements' spans, on ``app``'s engines (made once the app's database is set up)."""
    with app.app_context():
        for engine in db.engines.values():
            # The package declares SQLAlchemy < 2.1; the engine events it listens to are 2.1's too.
            SQLAlchemyInstrumentor().instrument(engine=engine, enable_commenter=False, skip_dep_check=True)


def flush(timeout_millis: int = 5000) -> bool:
    """Export what is waiting now (tests; a worker's exit flushes by itself)."""
    return _provider.force_flush(timeout_millis) if _provider is not None else True
