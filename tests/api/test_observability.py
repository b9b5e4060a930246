"""Observability through the test client: request ids, JSON logs without secrets, health and readiness,
metrics behind a token. The real service (metrics across workers, its logs) is
tests/e2e/test_observability_service.py."""

from __future__ import annotations

import io
import json
import logging
import re

import pytest

from authsvc.web.logs import JsonFormatter, TextFormatter
from tests.helpers import headers, redis_url

# Request ids --------------------------------------------------------------


def test_every_answer_carries_a_generated_request_id(client, setup):
    first = client.get("/healthz").headers["X-Request-Id"]
    second = client.get("/no/such/path", headers=headers()).headers["X-Request-Id"]
    assert len(first) == 32 and first != second


def test_a_well_formed_incoming_request_id_is_kept(client, setup):
    response = client.get("/healthz", headers={"X-Request-Id": "trace-0123456789abcdef"})
    assert response.headers["X-Request-Id"] == "trace-0123456789abcdef"


@pytest.mark.parametrize("incoming", ["short", "has space inside it", "x" * 200, "line\\nbreak-123", 'quote"d-12345'])
def test_a_malformed_incoming_request_id_is_replaced(client, setup, incoming):
    response = client.get("/healthz", headers={"X-Request-Id": incoming})
    assert response.headers["X-Request-Id"] != incoming
    assert len(response.headers["X-Request-Id"]) == 32


def test_log_lines_are_json_with_the_request_id(make_app):
    app = make_app()

    @app.get("/test-logs")
    def logs_something():
        logging.getLogger("authsvc.test").warning("inside %s", "the request")
        return ""

    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonFormatter())
    logging.getLogger().addHandler(handler)
    try:
        response = app.test_client().get("/test-logs", headers={"X-Request-Id": "req-123456789"})
    finally:
        logging.getLogger().removeHandler(handler)
    [line] = [json.loads(text) for text in lines.getvalue().splitlines() if "authsvc.test" in text]
    assert line["request_id"] == response.headers["X-Request-Id"] == "req-123456789"
    assert (line["level"], line["logger"], line["message"]) == ("warning", "authsvc.test", "inside the request")
    assert line["ts"].endswith("+00:00")


def test_secrets_in_log_arguments_are_scrubbed(caplog):
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("authlib.test").debug("Issue token %r", {"access_token": "AT-SECRET", "scope": "public"})
    assert "AT-SECRET" not in caplog.text
    assert "[redacted]" in caplog.text


# Health -----------------------------------------------------------------------


def test_healthz_and_readyz_answer_without_a_domain(client):
    assert client.get("/healthz").get_json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    body = ready.get_json()
    # The embedded store is no Redis: readiness says which store answered rather than claim one.
    store = "ok" if redis_url() else "in-process"
    assert (body["status"], body["checks"]) == ("ready", {"database": "ok", "redis": store})
    # The servers in use, by host:port (None for SQLite and the embedded store); never a URL or password.
    assert set(body["servers"]) == {"database", "redis"}
    for server in body["servers"].values():
        assert server is None or (server.rsplit(":", 1)[1].isdigit() and "@" not in server)


def test_metrics_can_be_kept_behind_a_token(make_app):
    app = make_app(AUTHSVC_METRICS_TOKEN="metrics-secret")
    client = app.test_client()
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    answer = client.get("/metrics", headers={"Authorization": "Bearer metrics-secret"})
    assert answer.status_code == 200
    assert answer.mimetype == "text/plain"


def test_text_log_lines_are_for_a_person_with_the_request_id(make_app):
    app = make_app()

    @app.get("/test-text-logs")
    def logs_something():
        logging.getLogger("authsvc.test").warning("inside %s", "the request")
        return ""

    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(TextFormatter())
    logging.getLogger().addHandler(handler)
    try:
        app.test_client().get("/test-text-logs", headers={"X-Request-Id": "req-123456789"})
    finally:
        logging.getLogger().removeHandler(handler)
    [line] = [text for text in lines.getvalue().splitlines() if "authsvc.test" in text]
    assert re.fullmatch(r"\d\d:\d\d:\d\d warning authsvc\.test: inside the request \(request req-123456789\)", line)


def test_building_the_app_without_redis_says_nothing_about_it(make_app, caplog):
    """The warning is the service's, once a start (config/gunicorn.py): every flask command builds the app too."""
    with caplog.at_level(logging.WARNING):
        make_app(REDIS_URL=None)
    assert "REDIS_URL" not in caplog.text
