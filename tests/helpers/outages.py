"""For the tests of outages (tests/api/platform/test_failures_database.py,
tests/api/platform/test_failures_redis.py): the
requests they send, timed, and what an answer during an outage must look like.
"""

import time

from tests.helpers import PASSWORD, REDIRECT_URI, headers


def assert_unavailable(response):
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    assert response.get_json()["error"] == "temporarily_unavailable"
    assert int(response.headers["Retry-After"]) > 0
    assert "Traceback" not in response.get_data(as_text=True)


def signin(client):
    return client.post("/auth/signin", json={"email": "person@example.com", "password": PASSWORD}, headers=headers())


def password_grant(client, client_id):
    return client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": client_id,
        },
        headers=headers(),
    )


def exchange(client, client_id, code):
    query = {"grant_type": "authorization_code", "code": code, "client_id": client_id, "redirect_uri": REDIRECT_URI}
    return client.post("/auth/oauth/token", query_string=query, headers=headers())


def authorize(client, client_id):
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI}
    return client.get("/auth/oauth/authorize", query_string=query, headers=headers())


def inspect(client, **where):
    return client.get(
        "/api/engine/v2/api_keys/inspect", headers=headers(**where.get("headers", {})), query_string=where.get("query")
    )


def timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started
