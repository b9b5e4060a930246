"""Deployment: behind a TLS-terminating proxy, protective headers, gunicorn settings, the Procfile."""

import json
import subprocess
import sys

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord
from tests.helpers import HOST, PASSWORD, REDIRECT_URI, location_params
from tests.helpers.servers import ROOT

FORWARDED = {"Host": HOST, "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}


@pytest.fixture
def behind_proxy(make_app, setup):
    """The app as a proxy that terminated TLS talks to it: plain http, with X-Forwarded-* headers."""
    return make_app(AUTHSVC_PROXY_HOPS=1).test_client()


def test_behind_the_proxy_the_service_builds_https_urls(behind_proxy):
    metadata = behind_proxy.get("/.well-known/oauth-authorization-server", headers=FORWARDED).get_json()
    assert metadata["issuer"] == f"https://{HOST}"
    assert metadata["token_endpoint"] == f"https://{HOST}/auth/oauth/token"


def test_behind_the_proxy_the_code_flow_needs_no_insecure_transport_switch(behind_proxy, setup, world):
    signed_in = behind_proxy.post(
        "/auth/signin", json={"email": "person@example.com", "password": PASSWORD}, headers=FORWARDED
    )
    assert signed_in.status_code == 202
    assert "Secure" in signed_in.headers["Set-Cookie"]
    authorised = behind_proxy.get(
        "/auth/oauth/authorize",
        query_string={"response_type": "code", "client_id": setup.public_app.client_id, "redirect_uri": REDIRECT_URI},
        headers=FORWARDED,
    )
    assert authorised.status_code == 302
    token = behind_proxy.post(
        "/auth/oauth/token",
        query_string={
            "grant_type": "authorization_code",
            "code": location_params(authorised)["code"],
            "client_id": setup.public_app.client_id,
            "redirect_uri": REDIRECT_URI,
        },
        headers=FORWARDED,
    )
    assert token.status_code == 200, token.get_json()
    assert token.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    # The client's own address, as the proxy saw it, is what is recorded (and rate limited).
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "signin.succeeded"))
    assert record.ip == "203.0.113.9"


def test_without_proxy_hops_forwarded_headers_are_not_believed(make_app, setup):
    client = make_app().test_client()
    metadata = client.get("/.well-known/oauth-authorization-server", headers=FORWARDED).get_json()
    assert metadata["issuer"] == f"http://{HOST}"
    refused = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
        },
        headers=FORWARDED,
    )
    assert refused.get_json()["error"] == "insecure_transport"
    assert "Strict-Transport-Security" not in refused.headers


def test_every_answer_says_nosniff_and_https_answers_say_hsts(client, setup):
    for response in (
        client.get("/healthz"),
        client.get("/no/such/path", headers={"Host": HOST}),
        client.get("/api/engine/v2/scopes", headers={"Host": HOST}),
    ):
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


def test_hsts_can_be_turned_off(make_app):
    response = make_app(AUTHSVC_HSTS_MAX_AGE=0).test_client().get("/healthz", base_url="https://localhost")
    assert "Strict-Transport-Security" not in response.headers


def test_html_answers_carry_a_content_security_policy(client, setup):
    page = client.get("/auth/login", headers={"Host": HOST})
    assert page.mimetype == "text/html"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    # Also the HTML werkzeug writes itself, such as the body of a redirect.
    redirect = client.get("/auth/logout", headers={"Host": HOST})
    assert redirect.status_code == 303 and redirect.mimetype == "text/html"
    assert redirect.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in redirect.headers["Content-Security-Policy"]


def gunicorn_settings(**env) -> dict:
    """config/gunicorn.py as gunicorn reads it, in a process of its own (it sets PROMETHEUS_MULTIPROC_DIR)."""
    code = (
        "import json, runpy; s = runpy.run_path('config/gunicorn.py'); "
        "print(json.dumps({k: v for k, v in s.items() if k[0] != '_' and isinstance(v, (int, str, dict, type(None)))}))"
    )
    base = {"PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_gunicorn_takes_its_workers_from_web_concurrency():
    settings = gunicorn_settings(REDIS_URL="redis://redis.internal:6379/0", WEB_CONCURRENCY="3", PORT="8123")
    assert (settings["workers"], settings["threads"], settings["bind"]) == (3, 1, "0.0.0.0:8123")
    assert settings["timeout"] == 30 and settings["graceful_timeout"] == 20
    # Without REDIS_URL the in-process store serves one process only.
    assert gunicorn_settings(WEB_CONCURRENCY="3")["workers"] == 1


def test_gunicorn_sync_workers_shed_at_accept_and_threaded_ones_are_gunicorns_own():
    # One thread a worker (with Redis, the default): the sync worker that answers an overdue connection at accept.
    with_redis = gunicorn_settings(REDIS_URL="redis://redis.internal:6379/0")
    assert with_redis["worker_class"] == "authsvc.web.shedding_worker.SheddingWorker"
    assert gunicorn_settings(GUNICORN_THREADS="1")["worker_class"] == "authsvc.web.shedding_worker.SheddingWorker"
    # Threads (the in-process store's default): gunicorn's threaded worker, shedding in WSGI only.
    assert gunicorn_settings()["worker_class"] == "gthread"


def test_gunicorn_logs_json_and_keeps_request_limits():
    settings = gunicorn_settings(AUTHSVC_MAX_HEADER_BYTES="4096")
    assert settings["logconfig_dict"]["formatters"]["json"]["()"] == "authsvc.web.logs.JsonFormatter"
    assert settings["accesslog"] == "-"
    assert settings["limit_request_field_size"] == 4096
    assert settings["limit_request_line"] == 8190


def test_gunicorn_believes_no_forwarded_header_whatever_the_hops_or_its_own_variable():
    """AUTHSVC_PROXY_HOPS, applied by the app (ProxyFix), is the one rule: a second reader of the same headers,
    with its own list of trusted peers, could disagree with it (docs/deployment.md#behind-a-proxy)."""
    settings = gunicorn_settings(AUTHSVC_PROXY_HOPS="2", FORWARDED_ALLOW_IPS="*")
    assert (settings["forwarded_allow_ips"], settings["secure_scheme_headers"], settings["forwarder_headers"]) == (
        "",
        {},
        "",
    )


def test_the_procfile_migrates_in_the_release_phase():
    lines = (ROOT / "Procfile").read_text().splitlines()
    assert "release: flask --app app db upgrade" in lines
    assert "web: gunicorn -c config/gunicorn.py app:app" in lines
