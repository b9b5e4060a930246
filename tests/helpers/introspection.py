"""Introspection for the tests: its URL, HTTP Basic credentials, a token from the password grant."""

from __future__ import annotations

import base64

from tests.helpers import HOST, PASSWORD, headers

INTROSPECT = "/auth/oauth/introspect"


def basic(client_id, secret):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def password_grant(client, client_id, host=HOST, **extra):
    body = {"grant_type": "password", "username": "service@example.com", "password": PASSWORD, "client_id": client_id}
    return client.post("/auth/oauth/token", json={**body, **extra}, headers=headers(host)).get_json()
