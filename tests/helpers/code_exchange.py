"""The code exchange and refresh requests, and the tokens of a code flow, for the tests of what follows them."""

from __future__ import annotations

from tests.helpers import REDIRECT_URI, get_code, headers, signin


def exchange(client, client_id, code, *, where="query", **extra):
    params = {"grant_type": "authorization_code", "code": code, "client_id": client_id, "redirect_uri": REDIRECT_URI}
    params.update(extra)
    params = {k: v for k, v in params.items() if v is not None}
    if where == "query":
        return client.post("/auth/oauth/token", query_string=params, headers=headers())
    if where == "json":
        return client.post("/auth/oauth/token", json=params, headers=headers())
    return client.post("/auth/oauth/token", data=params, headers=headers())


def refresh(client, client_id, refresh_token, **extra):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id, **extra}
    return client.post("/auth/oauth/token", data=data, headers=headers())


def tokens_for(client, setup, scope="public mqtt.read"):
    signin(client)
    code = get_code(client, setup.public_app.client_id, scope=scope)
    return exchange(client, setup.public_app.client_id, code).get_json()
