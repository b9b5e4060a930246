"""The device authorisation grant (RFC 8628) for the tests: a device's two requests and a person's answer."""

from __future__ import annotations

from tests.helpers import headers
from tests.helpers.pages import csrf_token

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def start(client, client_id: str, **params) -> object:
    return client.post("/auth/oauth/device_authorization", data={"client_id": client_id, **params}, headers=headers())


def poll(client, client_id: str, device_code: str) -> object:
    return client.post(
        "/auth/oauth/token",
        data={"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": client_id},
        headers=headers(),
    )


def answer(client, user_code: str, decision: str) -> object:
    """Open the verification page with the code (as verification_uri_complete does) and press a button."""
    page = client.get("/auth/device", query_string={"user_code": user_code}, headers=headers())
    assert page.status_code == 200, page.get_data(as_text=True)
    return client.post(
        "/auth/device/decision",
        data={"csrf_token": csrf_token(page), "user_code": user_code, decision: "1"},
        headers=headers(),
    )
