"""Overload under the real gunicorn: a request that waited for a worker past AUTHSVC_QUEUE_TIMEOUT is a 503 at once.

The worker is stopped (SIGSTOP) while requests arrive, so that they wait in
the listening socket's backlog as they would behind a busy worker, then let
go: what waited longer than the bound is answered 503 with Retry-After
without being served, the health check is answered as always, and the next
requests are served as usual.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from devtools.processes import children
from tests.helpers.servers import running_service

pytestmark = pytest.mark.slow

INSPECT = "/api/engine/v2/api_keys/inspect"
QUEUE_TIMEOUT = 0.3


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    env = {"WEB_CONCURRENCY": "1", "AUTHSVC_QUEUE_TIMEOUT": str(QUEUE_TIMEOUT), "AUTHSVC_RETRY_AFTER": "7"}
    with running_service(tmp_path_factory.mktemp("instance"), **env) as svc:
        svc.cli("domains", "create", "--name", "Overload", "--host", "127.0.0.1")
        yield svc


def inspect(url):
    return requests.get(url + INSPECT, headers={"Authorization": "Bearer not-a-token"}, timeout=20)


def token(url):
    body = {"grant_type": "client_credentials", "client_id": "nobody", "client_secret": "wrong"}
    return requests.post(url + "/auth/oauth/token", data=body, timeout=20)


def scim(url):
    return requests.get(url + "/scim/v2/Users", timeout=20)


def health(url):
    return requests.get(url + "/healthz", timeout=20)


def shed_count(url):
    metrics = requests.get(url + "/metrics", timeout=20).text
    [line] = [line for line in metrics.splitlines() if line.startswith("authsvc_shed_requests_total ")]
    return float(line.split()[1])


def test_requests_that_waited_past_the_bound_are_answered_503_at_once_and_the_next_are_served(service):
    [worker] = children(service.process.pid)
    # Served as usual before: what these requests answer when nothing waits.
    assert inspect(service.url).status_code == 401
    refused = token(service.url).status_code  # an unknown client: 400 or 401
    assert refused in (400, 401)
    # What was shed before is counted from here: on a loaded machine a request sent as the worker
    # started (the readiness probe's) can wait past the bound and be shed, as the rule says.
    shed_before = shed_count(service.url)
    sends = [inspect, token, inspect, token, scim, health]
    with ThreadPoolExecutor(len(sends)) as pool:
        os.kill(worker, signal.SIGSTOP)
        try:
            pending = [pool.submit(send, service.url) for send in sends]
            time.sleep(3 * QUEUE_TIMEOUT)  # each request is in the backlog by now, and older than the bound
        finally:
            os.kill(worker, signal.SIGCONT)
        answers = [future.result() for future in pending]
    *shed, scim_answer, healthz = answers
    for response in shed:
        assert response.status_code == 503, (response.status_code, response.text)
        assert response.headers["Retry-After"] == "7"
        assert response.headers["Cache-Control"] == "no-store"
        assert response.json()["error"] == "temporarily_unavailable"
    # SCIM clients get SCIM's error (RFC 7644 3.12).
    assert scim_answer.status_code == 503
    assert scim_answer.headers["Retry-After"] == "7"
    assert scim_answer.json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert scim_answer.json()["status"] == "503"
    # The health check is never shed: a load balancer must not take an overloaded instance for a dead one.
    assert healthz.status_code == 200
    # Back to normal at once: the next requests waited for nobody.
    assert inspect(service.url).status_code == 401
    assert token(service.url).status_code == refused
    assert shed_count(service.url) == shed_before + 5
