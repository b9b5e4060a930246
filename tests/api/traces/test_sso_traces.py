"""Traces across a single sign-on: the callback's calls to the OpenID provider (its token endpoint, its JWKS)
are client spans of the callback's trace, and each carries a W3C traceparent with that trace's id to the
provider, so that the provider's own traces join ours. Every log line written while the callback runs carries
the same trace id (here: the HTTP client's lines about the calls, and SQLAlchemy's line for each statement;
the lines of other threads, such as the outbox's senders, are not the callback's).
A callback that arrives with a traceparent continues that trace, out to the provider.

The provider is the loopback one of the SSO tests (tests/fakes/providers.py), which records the traceparent
of each request it gets; the spans are exported over OTLP/HTTP to a receiver here that decodes the protobuf.
The service runs in a fresh interpreter: a tracer provider is set once a process."""

from __future__ import annotations

import json
import os

import pytest

from tests.fakes.providers import Provider
from tests.helpers import DATABASE_URL, redis_url
from tests.helpers.otlp import Collector, attributes, environment
from tests.helpers.python_run import run_python
from tests.helpers.sso import PERSON, create_provider

INCOMING_TRACE = "0af7651916cd43dd8448eb211c80319c"
INCOMING_PARENT = "b7ad6b7169203331"
CALLBACK_ROUTE = "/auth/oauth2/callback"
SPAN_KIND_CLIENT = 3  # opentelemetry.proto.trace.v1.Span.SpanKind.SPAN_KIND_CLIENT

# Two sign-ins through the provider in the fresh interpreter, the second with a traceparent on its callback;
# the JSON log lines written during each callback, and what it needs to check.
SIGN_INS = """
import json, logging, os, threading
from urllib.parse import urlsplit
import requests
from tests.helpers import HttpsClient, base_config, headers
from authsvc import create_app
from authsvc.web.logs import JsonFormatter
from authsvc.web import traces_sdk

config = {**base_config(), "SQLALCHEMY_DATABASE_URI": os.environ["FLOW_DATABASE"],
          "AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS": True}
if os.environ.get("FLOW_REDIS"):
    config["REDIS_URL"] = os.environ["FLOW_REDIS"]
app = create_app(config)
app.test_client_class = HttpsClient

lines = []
requests_thread = threading.get_ident()  # the test client serves the requests here; other threads are not theirs
class Keep(logging.Handler):
    def emit(self, record):
        if record.thread == requests_thread:
            lines.append(json.loads(JsonFormatter().format(record)))
root = logging.getLogger()
root.addHandler(Keep(logging.DEBUG))
root.setLevel(logging.DEBUG)
logging.getLogger("sqlalchemy.engine").setLevel(logging.INFO)  # each statement, as echo writes it

def sign_in(traceparent):
    client = app.test_client()
    start = client.get("/auth/oauth2", query_string={"id": os.environ["FLOW_PROVIDER"]}, headers=headers())
    assert start.status_code == 302, start.get_data(as_text=True)
    at_provider = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(at_provider.headers["Location"])
    extra = {"traceparent": traceparent} if traceparent else {}
    del lines[:]
    callback = client.get(back.path, query_string=back.query, headers=headers(**extra))
    return {"status": callback.status_code, "lines": list(lines)}

done = [sign_in(None), sign_in(os.environ["FLOW_TRACEPARENT"])]
traces_sdk.flush()
print(json.dumps(done))
"""


def sign_ins(provider_id: str, collector: Collector) -> list[dict]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        "FLOW_DATABASE": DATABASE_URL,
        "FLOW_REDIS": redis_url() or "",
        "FLOW_PROVIDER": provider_id,
        "FLOW_TRACEPARENT": f"00-{INCOMING_TRACE}-{INCOMING_PARENT}-01",
        **environment(collector),
    }
    done = run_python(SIGN_INS, **env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_sso_sign_in_carries_its_trace_to_the_provider_and_into_every_log_line(runner, setup):
    pytest.importorskip("opentelemetry.proto")
    collector = Collector()
    try:
        with Provider("oidc") as provider:
            provider.sign_in_as(**PERSON)
            provider_id = create_provider(runner, "--issuer", provider.url)["id"]
            first, second = sign_ins(provider_id, collector)
            arrived = list(provider.traceparents)
    finally:
        collector.close()
    assert first["status"] == second["status"] == 303, (first, second)
    callbacks = [span for span in collector.spans if attributes(span).get("http.route") == CALLBACK_ROUTE]
    [fresh] = [span for span in callbacks if not span.parent_span_id]
    [continued] = [span for span in callbacks if span.parent_span_id.hex() == INCOMING_PARENT]
    assert continued.trace_id.hex() == INCOMING_TRACE, "an incoming traceparent is continued"
    assert fresh.trace_id.hex() != INCOMING_TRACE
    spans_by_id = {span.span_id: span for span in collector.spans}

    def in_callback(span) -> bool:
        while span.parent_span_id:
            if span.parent_span_id == (fresh if span.trace_id == fresh.trace_id else continued).span_id:
                return True
            span = spans_by_id[span.parent_span_id]
        return False

    token_calls = [header for path, header in arrived if path == "/token"]
    assert len(token_calls) == 2 and all(token_calls), arrived
    for callback in (fresh, continued):
        trace_id = callback.trace_id.hex()
        at_provider = [
            (path, header.split("-"))
            for path, header in arrived
            if header and header.split("-")[1] == trace_id and path in ("/token", "/jwks", "/userinfo")
        ]
        assert "/token" in {path for path, _ in at_provider}, (trace_id, arrived)
        for path, (_, _, parent, _) in at_provider:
            outbound = spans_by_id[bytes.fromhex(parent)]
            assert outbound.kind == SPAN_KIND_CLIENT and outbound.trace_id == callback.trace_id
            assert in_callback(outbound), f"the call to {path} is a span of the callback's request"
            seen = attributes(outbound)
            url = seen.get("http.url", seen.get("url.full"))
            assert url == provider.url + path, seen
    for callback, run in ((fresh, first), (continued, second)):
        loggers = {line["logger"] for line in run["lines"]}
        assert {"urllib3.connectionpool", "sqlalchemy.engine.Engine"} <= loggers, loggers
        assert {line.get("trace_id") for line in run["lines"]} == {callback.trace_id.hex()}, run["lines"]
