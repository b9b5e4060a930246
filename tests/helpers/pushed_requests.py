"""Pushed authorisation requests (RFC 9126) as the tests make them (tests/api/par_jar/test_pushed_requests*.py,
tests/api/par_jar/test_request_objects.py): ``push`` posts a request to /auth/oauth/par, authenticated by a Basic header
(``basic``) or in the body; ``pushed_uri`` takes the request_uri of an accepted push and ``authorize_pushed``
sends the browser to /auth/oauth/authorize with it; ``assert_refused`` checks a JSON error that is no redirect;
``confidential`` is the setup's confidential application with its Basic header.
"""

from __future__ import annotations

import base64

import pytest

from tests.helpers import HOST, REDIRECT_URI, headers

URN = "urn:ietf:params:oauth:request_uri:"
PAR_URL = f"https://{HOST}/auth/oauth/par"


def basic(client_id: str, secret: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


def push(client, auth: dict | None = None, **params):
    """POST a request to PAR: ``auth`` is the Basic header, else the body authenticates (or names the client)."""
    body = {"response_type": "code", "redirect_uri": REDIRECT_URI, "scope": "public", "state": "s", **params}
    body = {k: v for k, v in body.items() if v is not None}
    return client.post("/auth/oauth/par", data=body, headers=headers(**(auth or {})))


def pushed_uri(response) -> str:
    assert response.status_code == 201, response.get_json()
    return response.get_json()["request_uri"]


def authorize_pushed(client, client_id: str, request_uri: str, **extra):
    query = {"client_id": client_id, "request_uri": request_uri, **extra}
    return client.get("/auth/oauth/authorize", query_string=query, headers=headers())


def assert_refused(response, error: str, status: int = 400) -> dict:
    """A JSON error to the caller, never a redirect."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert "Location" not in response.headers
    body = response.get_json()
    assert body["error"] == error, body
    return body


@pytest.fixture
def confidential(setup):
    return setup.confidential_app, basic(setup.confidential_app.client_id, setup.client_secret)
