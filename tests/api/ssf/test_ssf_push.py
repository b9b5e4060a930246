"""Push delivery (RFC 8935): each change a stream asked for reaches the receiver as a SET it verifies against
the domain's JWKS, fetched over HTTP; SCIM deprovisioning arrives at once as session-revoked and
account-disabled."""

from __future__ import annotations

import time

from tests.helpers.ssf import ACCOUNT_DISABLED, ALL_EVENTS, PUSH, SESSION_REVOKED, bearer, events_of


def create_push_stream(client, receiving, pushed, events=ALL_EVENTS) -> dict:
    body = {
        "events_requested": events,
        "delivery": {"method": PUSH, "endpoint_url": pushed.url, "authorization_header": pushed.authorization},
    }
    response = client.post("/ssf/streams", json=body, headers=bearer(receiving.token))
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_scim_deprovisioning_reaches_a_push_receiver_within_a_second(client, setup, receiving, pushed, worker, scim):
    """The receiver hears the account's sessions were revoked and the account disabled, signed by the domain."""
    stream = create_push_stream(client, receiving, pushed)
    user = scim.create_user("leaver@example.com")
    response = scim.patch(f"/Users/{user['id']}", [{"op": "replace", "path": "active", "value": False}])
    assert response.status_code == 200, response.get_json()
    # The deprovisioning is committed when SCIM answers: the SETs arrive within a second of it.
    committed = time.monotonic()
    received = pushed.wait(2, timeout=1)
    assert time.monotonic() - committed < 1
    assert events_of(received) == [SESSION_REVOKED, ACCOUNT_DISABLED]
    for claims in received:
        assert claims["sub_id"] == {"format": "iss_sub", "iss": stream["iss"], "sub": user["id"]}
    assert received[0]["txn"] == received[1]["txn"]
    assert received[0]["jti"] != received[1]["jti"]
    assert received[0]["events"][SESSION_REVOKED]["initiating_entity"] == "admin"
    assert pushed.refused == []


def test_scim_delete_reaches_the_receiver_too(client, setup, receiving, pushed, worker, scim):
    create_push_stream(client, receiving, pushed)
    user = scim.create_user("gone@example.com")
    assert scim.delete(f"/Users/{user['id']}").status_code == 204
    committed = time.monotonic()
    assert events_of(pushed.wait(2, timeout=1)) == [SESSION_REVOKED, ACCOUNT_DISABLED]
    assert time.monotonic() - committed < 1
