"""Traces: with the standard OpenTelemetry environment, a code flow's token request is one trace, exported
over OTLP/HTTP to a receiver here that decodes the protobuf (opentelemetry-proto): the request's span, its
SQL and Redis spans, continuing the caller's traceparent, and nothing secret in any attribute. Without it,
no instrumentation of OpenTelemetry is even imported. The service runs in a fresh interpreter: a tracer
provider is set once a process."""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers import DATABASE_URL, PASSWORD, redis_url
from tests.helpers.otlp import Collector, attributes
from tests.helpers.python_run import run_python

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"

# The code flow in the fresh interpreter, on the test's database: sign in, authorise, exchange the code
# with a traceparent, print what it needs to check.
FLOW = """
import json, os
from tests.helpers import HttpsClient, base_config, get_code, headers, signin
from authsvc import create_app
config = {**base_config(), "SQLALCHEMY_DATABASE_URI": os.environ["FLOW_DATABASE"]}
if os.environ.get("FLOW_REDIS"):
    config["REDIS_URL"] = os.environ["FLOW_REDIS"]
app = create_app(config)
app.test_client_class = HttpsClient
# What gunicorn hands the app, kept to write the access line the way its worker does (below).
environs = []
served = app.wsgi_app
def keep_environ(environ, start_response):
    environs.append(environ)
    return served(environ, start_response)
app.wsgi_app = keep_environ
client = app.test_client()
signin(client)
code = get_code(client, os.environ["FLOW_CLIENT"])
form = {"grant_type": "authorization_code", "code": code, "client_id": os.environ["FLOW_CLIENT"],
        "client_secret": os.environ["FLOW_SECRET"], "redirect_uri": "https://app.example.com/callback"}
answer = client.post("/auth/oauth/token", data=form, headers=headers(traceparent=os.environ["FLOW_TRACEPARENT"]))
import sys
# redis-py itself imports OpenTelemetry's SDK when it is installed (redis.observability); ours is the
# instrumentation and the exporter, imported only when traces are on.
traced = "authsvc.web.traces_sdk" in sys.modules or any(
    name.startswith("opentelemetry.instrumentation") for name in sys.modules
)
tracing_modules = sorted(
    name for name in sys.modules
    if name.startswith(("opentelemetry.instrumentation", "opentelemetry.exporter", "opentelemetry.sdk.trace"))
)
import logging
from authsvc.core import tracing
from authsvc.web.logs import JsonFormatter
with tracing.span("probe"):
    line = json.loads(JsonFormatter().format(logging.LogRecord("probe", 20, "", 0, "a line", None, None)))
# gunicorn's access line for the exchange, written as a worker writes it: after the request's span ended.
from datetime import timedelta
from types import SimpleNamespace
from gunicorn.config import Config
from authsvc.web.access_log import AccessLogger
gunicorn_config = Config()
gunicorn_config.set("accesslog", os.devnull)
access = AccessLogger(gunicorn_config)
written = []
class Keep(logging.Handler):
    def emit(self, record):
        written.append(json.loads(JsonFormatter().format(record)))
access.access_log.addHandler(Keep())
sent = SimpleNamespace(status="200 OK", headers=list(answer.headers.items()), sent=len(answer.data))
access.access(sent, None, environs[-1], timedelta(milliseconds=3))
# An API request's inspect, with the token just issued: on PostgreSQL the fast path answers it below Flask.
bearer = "Bearer " + answer.get_json()["access_token"]
inspected = client.get("/api/engine/v2/api_keys/inspect", headers=headers(Authorization=bearer))
if traced:
    from authsvc.web import traces_sdk
    traces_sdk.flush()
print(json.dumps({"status": answer.status_code, "code": code, "traced": traced, "log": line.get("trace_id"),
                  "access": written[0].get("trace_id", "none") if written else None, "modules": tracing_modules,
                  "inspected": inspected.status_code}))
"""


def flow(setup, **env):
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        "FLOW_DATABASE": DATABASE_URL,
        "FLOW_REDIS": redis_url() or "",
        "FLOW_CLIENT": setup.confidential_app.client_id,
        "FLOW_SECRET": setup.client_secret,
        "FLOW_TRACEPARENT": f"00-{TRACE_ID}-{PARENT}-01",
        **env,
    }
    done = run_python(FLOW, **environment)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_code_exchange_is_one_trace_with_its_request_sql_and_redis_spans(setup):
    pytest.importorskip("opentelemetry.proto")
    collector = Collector()
    try:
        answer = flow(
            setup,
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OTEL_SERVICE_NAME="authsvc-test",
            OTEL_TRACES_SAMPLER="always_on",
        )
    finally:
        collector.close()
    assert answer["status"] == 200 and answer["traced"] and "opentelemetry.sdk.trace" in answer["modules"]
    [probe] = [span for span in collector.spans if span.name == "probe"]
    assert answer["log"] == probe.trace_id.hex(), "a log line carries the current trace's id"
    assert answer["access"] == TRACE_ID, "the access line carries its request's trace id"
    ours = [span for span in collector.spans if span.trace_id.hex() == TRACE_ID]
    [request] = [span for span in ours if span.parent_span_id.hex() == PARENT]
    seen = attributes(request)
    assert seen["http.route"] == "/auth/oauth/token" and seen["authsvc.grant_type"] == "authorization_code"
    assert seen["authsvc.client_id"] == setup.confidential_app.client_id and seen["authsvc.domain"]
    assert seen.get("http.status_code", seen.get("http.response.status_code")) == 200
    systems = {attributes(span).get("db.system", attributes(span).get("db.system.name")) for span in ours}
    assert {"redis"} & systems and systems & {"sqlite", "postgresql"}, systems
    assert all(span.trace_id == request.trace_id for span in ours)
    assert answer["inspected"] == 200
    [inspect] = [span for span in collector.spans if "/api_keys/inspect" in json.dumps(attributes(span))]
    assert inspect.trace_id != request.trace_id, "every request is a span, inspect's fast path too"
    exported = b"".join(collector.raw)
    for secret in (answer["code"], setup.client_secret, PASSWORD):
        assert secret.encode() not in exported


def test_without_an_opentelemetry_variable_no_instrumentation_is_imported(setup):
    answer = flow(setup)
    assert answer == {
        "status": 200,
        "code": answer["code"],
        "traced": False,
        "log": None,
        "access": "none",
        "modules": [],
        "inspected": 200,
    }, "neither the trace SDK, nor an exporter, nor an instrumentation package"
