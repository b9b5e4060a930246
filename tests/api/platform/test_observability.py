"""Observability through the test client: request ids, JSON logs without secrets, health and readiness,
metrics behind a token. The real service (metrics across workers, its logs) is
tests/e2e/test_observability_service.py."""

from __future__ import annotations

import io
import json
import logging
import re

import pytest
from sqlalchemy import select

from authsvc.core.models import User
from authsvc.web.logs import JsonFormatter, TextFormatter
from tests.helpers import REDIRECT_URI, get_code, headers, redis_url, signin
from tests.helpers.admin_api import system_admin_key

# What readiness says of the store: a Redis answering, or the embedded store of the SQLite pass.
STORE_READY = "ok" if redis_url() else "in-process"

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
    app = make_app(fresh=True)

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
    assert ready.get_json() == {"status": "ready", "checks": {"database": "ok", "redis": STORE_READY}}


def test_a_system_admins_api_key_sees_the_servers_in_use(client, setup, world):
    """Operators find the primaries after a failover in readyz; docs/operations.md#logs-health-and-metrics."""
    key = system_admin_key(world, setup.domain)
    ready = client.get("/readyz", headers=headers(**{"X-API-Key": key}))
    assert ready.status_code == 200
    body = ready.get_json()
    # The embedded store is no Redis: readiness says which store answered rather than claim one.
    assert (body["status"], body["checks"]) == ("ready", {"database": "ok", "redis": STORE_READY})
    # The servers in use, by host:port (None for SQLite and the embedded store); never a URL or password.
    assert set(body["servers"]) == {"database", "redis"}
    for server in body["servers"].values():
        assert server is None or (server.rsplit(":", 1)[1].isdigit() and "@" not in server)


def test_a_system_admins_bearer_token_sees_the_servers_in_use(client, setup, world):
    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    application, _ = world.application(setup.domain, scopes="public admin")
    signin(client, root.email)
    code = get_code(client, application.client_id, scope="admin")
    exchange = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": application.client_id,
        "redirect_uri": REDIRECT_URI,
    }
    token = client.post("/auth/oauth/token", data=exchange, headers=headers()).get_json()["access_token"]
    ready = client.get("/readyz", headers=headers(Authorization=f"Bearer {token}"))
    assert set(ready.get_json()["servers"]) == {"database", "redis"}


def _not_a_system_admins_credential(world, setup) -> dict[str, dict[str, str]]:
    root_key = system_admin_key(world, setup.domain)
    [root] = world.query(select(User).where(User.email == "root@example.com"))
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    return {
        "a domain admin's key": headers(**{"X-API-Key": world.api_key(admin, scopes="admin", permission="admin")}),
        "a system admin's key without the admin scope": headers(**{"X-API-Key": world.api_key(root)}),
        "a system admin's key with support permission": headers(
            **{"X-API-Key": world.api_key(root, scopes="admin", permission="support")}
        ),
        "a person's key": headers(**{"X-API-Key": world.api_key(setup.person)}),
        "a system admin's key on an unknown host": headers("nowhere.example", **{"X-API-Key": root_key}),
        "a key with a wrong secret": headers(**{"X-API-Key": root_key[:-4] + "AAAA"}),
        "a malformed key": headers(**{"X-API-Key": "not a key \u00e9"}),
        "an unknown bearer token": headers(Authorization="Bearer " + "x" * 43),
        "an empty bearer token": headers(Authorization="Bearer "),
        "another scheme": headers(Authorization="Negotiate abc"),
        "a client's Basic credentials": headers(Authorization="Basic Y2xpZW50OnNlY3JldA=="),
        "a DPoP token without a proof": headers(Authorization="DPoP " + "x" * 43),
    }


def test_readyz_names_no_server_to_any_other_caller(client, setup, world):
    """Anonymous callers (load balancers, anyone who reaches the port) learn readiness, not where the servers are.

    Any credential that is not a valid system admin's with the admin scope is no credential here: readyz
    still answers its status (a 4xx would read as "not ready" to a load balancer).
    """
    for name, presented in _not_a_system_admins_credential(world, setup).items():
        ready = client.get("/readyz", headers=presented)
        assert ready.status_code == 200, (name, ready.get_data(as_text=True))
        assert ready.get_json() == {"status": "ready", "checks": {"database": "ok", "redis": STORE_READY}}, name
        assert "127.0.0.1" not in ready.get_data(as_text=True) and "localhost" not in ready.get_data(as_text=True)


def test_metrics_can_be_kept_behind_a_token(make_app):
    app = make_app(AUTHSVC_METRICS_TOKEN="metrics-secret")
    client = app.test_client()
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    answer = client.get("/metrics", headers={"Authorization": "Bearer metrics-secret"})
    assert answer.status_code == 200
    assert answer.mimetype == "text/plain"


# Every other Authorization header, or none, with the token in the query string as well (not a place it is read).
NOT_THE_METRICS_TOKEN = [
    None,
    "",
    "Bearer",
    "Bearer ",
    "Bearer wrong",
    "Bearer metrics-secre",
    "Bearer metrics-secretx",
    "Bearer metrics-secret x",
    "Basic bWV0cmljczptZXRyaWNzLXNlY3JldA==",
    "metrics-secret",
    "Bearer m\u00e9trics-secret",
    "DPoP metrics-secret",
]


def test_metrics_behind_a_token_refuse_every_other_authorization(make_app):
    client = make_app(AUTHSVC_METRICS_TOKEN="metrics-secret").test_client()
    for authorization in NOT_THE_METRICS_TOKEN:
        sent = {} if authorization is None else {"Authorization": authorization}
        refused = client.get("/metrics", headers=sent, query_string={"bearer_token": "metrics-secret"})
        assert refused.status_code == 401, authorization
        assert refused.get_json()["error"] == "invalid_token"
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'


def test_the_metrics_tokens_scheme_is_case_insensitive(make_app):
    """RFC 9110 11.1: an authentication scheme is case-insensitive, and RFC 6750 2.1 lets spaces follow it;
    scrapers differ in how they write it."""
    client = make_app(AUTHSVC_METRICS_TOKEN="metrics-secret").test_client()
    for authorization in ("Bearer metrics-secret", "bearer metrics-secret", "BEARER  metrics-secret"):
        assert client.get("/metrics", headers={"Authorization": authorization}).status_code == 200, authorization


def test_text_log_lines_are_for_a_person_with_the_request_id(make_app):
    app = make_app(fresh=True)

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
