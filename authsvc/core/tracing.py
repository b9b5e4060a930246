"""The seam between the service and OpenTelemetry (docs/operations.md#traces): off unless installed.

``authsvc.web.traces`` installs a tracer here when the standard OpenTelemetry
environment asks for traces; until then ``span`` is a context manager that
does nothing and ``trace_id`` is None, and OpenTelemetry is not even imported.
A span of our own is made only where no instrumentation package makes one
(bcrypt, and a request a middleware answers below Flask: ``served``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

# The WSGI environ's key for a traced request's trace id: gunicorn writes the access log line after the
# request's span has ended, and reads it there (authsvc.web.access_log).
ENVIRON_KEY = "authsvc.trace_id"

_span: Callable[[str], AbstractContextManager[Any]] | None = None
_trace_id: Callable[[], str | None] | None = None
_served: Callable[[dict[str, Any], str, str, float], None] | None = None


def install(
    span: Callable[[str], AbstractContextManager[Any]],
    trace_id: Callable[[], str | None],
    served: Callable[[dict[str, Any], str, str, float], None],
) -> None:
    global _span, _trace_id, _served
    _span, _trace_id, _served = span, trace_id, served


def served(environ: dict[str, Any], route: str, status: str, started: float) -> None:
    """The span of a request a middleware answered itself (inspect's fast path), when traces are on:
    continuing the caller's traceparent, from ``started`` (``time.perf_counter()``) to now."""
    if _served is not None:
        _served(environ, route, status, started)


def span(name: str) -> AbstractContextManager[Any]:
    """A child span of the current one named ``name``, when traces are on."""
    return _span(name) if _span is not None else nullcontext()


def trace_id() -> str | None:
    """The current trace's id (32 hex digits), for log lines; None when traces are off or none is current."""
    return _trace_id() if _trace_id is not None else None
