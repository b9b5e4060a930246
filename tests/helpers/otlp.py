"""An OTLP/HTTP trace receiver on loopback for the trace tests: it decodes each export (protobuf,
opentelemetry-proto) and keeps its spans, as a collector would receive them.

Used by tests/api/traces/test_traces.py and tests/api/traces/test_sso_traces.py.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.helpers import QUICK_SHUTDOWN


class Collector:
    """An OTLP/HTTP trace receiver on loopback: decodes each export (protobuf) and keeps its spans."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.spans: list = []
        self.raw: list[bytes] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                collector.raw.append(data)
                export = ExportTraceServiceRequest.FromString(data)
                for resource_spans in export.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        collector.spans.extend(scope_spans.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def attributes(span) -> dict:
    """A span's attributes as a dict of plain values."""
    found = {}
    for item in span.attributes:
        value = item.value
        found[item.key] = value.string_value or value.int_value or value.bool_value
    return found


def environment(collector: Collector, **extra: str) -> dict[str, str]:
    """The standard OpenTelemetry variables that send every trace to ``collector``."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_SERVICE_NAME": "authsvc-test",
        "OTEL_TRACES_SAMPLER": "always_on",
        **extra,
    }
