"""Poll delivery (RFC 8936): a poll stream's SETs wait in SQL until the receiver acknowledges them; each poll
answers the oldest, signed with the domain's keys (verified here against the JWKS fetched over HTTP)."""

from __future__ import annotations

from sqlalchemy import select

from tests.helpers.admin_api import call
from tests.helpers.ssf import (
    ACCOUNT_DISABLED,
    ACCOUNT_ENABLED,
    ACCOUNT_PURGED,
    ALL_EVENTS,
    CREDENTIAL_CHANGE,
    IDENTIFIER_CHANGED,
    SESSION_REVOKED,
    VERIFICATION,
    bearer,
)


def poll_stream(client, receiving, events=ALL_EVENTS) -> str:
    response = client.post("/ssf/streams", json={"events_requested": events}, headers=bearer(receiving.token))
    assert response.status_code == 201, response.get_json()
    return response.get_json()["stream_id"]


def poll(client, receiving, sid: str, **body) -> dict:
    response = client.post(f"/ssf/poll/{sid}", json=body, headers=bearer(receiving.token))
    assert response.status_code == 200, response.get_json()
    assert response.headers["Cache-Control"].startswith("no-store")
    return response.get_json()


def verified(verifier, answer: dict) -> list[dict]:
    found = []
    for jti, token in answer["sets"].items():
        claims = verifier.verify(token)
        assert claims["jti"] == jti
        found.append(claims)
    return found


def test_sets_wait_until_acknowledged_and_come_oldest_first(client, setup, keys, receiving, verifier, scim):
    sid = poll_stream(client, receiving)
    user = scim.create_user("leaver@example.com")
    scim.patch(f"/Users/{user['id']}", [{"op": "replace", "path": "active", "value": False}])
    first = poll(client, receiving, sid, maxEvents=1, returnImmediately=True)
    assert first["moreAvailable"] is True
    [revoked] = verified(verifier, first)
    assert list(revoked["events"]) == [SESSION_REVOKED]
    assert revoked["sub_id"] == {"format": "iss_sub", "iss": "https://auth.example.com", "sub": user["id"]}
    # Not acknowledged: answered again, with the one after it.
    again = poll(client, receiving, sid)
    assert list(again["sets"])[0] == revoked["jti"] and again["moreAvailable"] is False
    both = verified(verifier, again)
    assert [list(claims["events"])[0] for claims in both] == [SESSION_REVOKED, ACCOUNT_DISABLED]
    # Acknowledged: gone; an acknowledgement alone (maxEvents 0) answers nothing.
    done = poll(
        client,
        receiving,
        sid,
        ack=[revoked["jti"]],
        setErrs={both[1]["jti"]: {"err": "x", "description": "y"}},
        maxEvents=0,
    )
    assert done == {"sets": {}, "moreAvailable": False}
    assert poll(client, receiving, sid)["sets"] == {}


def test_each_event_type_is_made_by_its_change(client, setup, keys, receiving, verifier, world):
    """An admin's changes: disabling (sessions revoked, account disabled), enabling, a new password, a new
    address, ending the sessions, a factor reset, and deleting the account."""
    sid = poll_stream(client, receiving)
    person = f"/users/{setup.person.id}"
    assert call(client, "patch", person, keys.admin_key, {"disabled": True}).status_code == 200
    assert call(client, "patch", person, keys.admin_key, {"disabled": False}).status_code == 200
    assert call(client, "patch", person, keys.admin_key, {"password": "Another-Long-Pass-9"}).status_code == 200
    assert call(client, "patch", person, keys.admin_key, {"email": "renamed@example.com"}).status_code == 200
    assert call(client, "post", f"{person}/revoke", keys.admin_key).status_code == 200
    assert call(client, "delete", person, keys.admin_key).status_code in (200, 204)
    claims = verified(verifier, poll(client, receiving, sid))
    events = [(list(c["events"])[0], c["events"][list(c["events"])[0]]) for c in claims]
    assert [event for event, _ in events] == [
        SESSION_REVOKED,
        ACCOUNT_DISABLED,
        ACCOUNT_ENABLED,
        CREDENTIAL_CHANGE,
        IDENTIFIER_CHANGED,
        SESSION_REVOKED,
        ACCOUNT_PURGED,
    ]
    assert events[3][1]["credential_type"] == "password" and events[3][1]["change_type"] == "update"
    assert events[4][1]["new-value"] == "renamed@example.com"
    assert {c["sub_id"]["sub"] for c in claims} == {str(setup.person.id)}


def test_a_stream_gets_only_what_it_asked_for_and_not_a_removed_subject(
    client, setup, keys, receiving, verifier, world
):
    sid = poll_stream(client, receiving, events=[ACCOUNT_DISABLED])
    other = world.user(setup.domain, "other@example.com")
    removed = client.post(
        "/ssf/subjects/remove",
        json={"stream_id": sid, "subject": {"format": "email", "email": "Other@Example.com"}},
        headers=bearer(receiving.token),
    )
    assert removed.status_code == 204
    for user_id in (setup.person.id, other.id):
        assert call(client, "patch", f"/users/{user_id}", keys.admin_key, {"disabled": True}).status_code == 200
    [only] = verified(verifier, poll(client, receiving, sid))
    assert list(only["events"]) == [ACCOUNT_DISABLED] and only["sub_id"]["sub"] == str(setup.person.id)
    added = client.post(
        "/ssf/subjects/add",
        json={
            "stream_id": sid,
            "subject": {"format": "iss_sub", "iss": "https://auth.example.com", "sub": str(other.id)},
        },
        headers=bearer(receiving.token),
    )
    assert added.status_code == 200
    assert call(client, "patch", f"/users/{other.id}", keys.admin_key, {"disabled": False}).status_code == 200
    assert call(client, "patch", f"/users/{other.id}", keys.admin_key, {"disabled": True}).status_code == 200
    subjects = [c["sub_id"]["sub"] for c in verified(verifier, poll(client, receiving, sid))]
    assert subjects == [str(setup.person.id), str(other.id)]
    # An unknown subject is accepted alike: the answer tells nobody who has an account here.
    unknown = {"stream_id": sid, "subject": {"format": "email", "email": "nobody@example.com"}}
    assert client.post("/ssf/subjects/add", json=unknown, headers=bearer(receiving.token)).status_code == 200


def test_verification_answers_the_receivers_state(client, setup, receiving, verifier):
    sid = poll_stream(client, receiving, events=[])
    assert (
        client.post("/ssf/verify", json={"stream_id": sid, "state": "abc"}, headers=bearer(receiving.token)).status_code
        == 204
    )
    [claims] = verified(verifier, poll(client, receiving, sid))
    assert claims["events"] == {VERIFICATION: {"state": "abc"}}
    assert claims["sub_id"] == {"format": "opaque", "id": sid}


def test_a_paused_stream_holds_its_sets_and_a_disabled_one_drops_them(client, setup, keys, receiving, verifier):
    sid = poll_stream(client, receiving)
    status = {"stream_id": sid, "status": "paused"}
    assert client.post("/ssf/status", json=status, headers=bearer(receiving.token)).status_code == 200
    assert call(client, "patch", f"/users/{setup.person.id}", keys.admin_key, {"disabled": True}).status_code == 200
    assert poll(client, receiving, sid)["sets"] == {}
    status["status"] = "enabled"
    assert client.post("/ssf/status", json=status, headers=bearer(receiving.token)).status_code == 200
    assert len(poll(client, receiving, sid)["sets"]) == 2
    status["status"] = "disabled"
    assert client.post("/ssf/status", json=status, headers=bearer(receiving.token)).status_code == 200
    assert call(client, "patch", f"/users/{setup.person.id}", keys.admin_key, {"disabled": False}).status_code == 200
    status["status"] = "enabled"
    assert client.post("/ssf/status", json=status, headers=bearer(receiving.token)).status_code == 200
    assert poll(client, receiving, sid)["sets"] == {}


def test_a_stream_turned_from_poll_to_push_pushes_what_was_not_polled(client, setup, keys, receiving, pushed, worker):
    sid = poll_stream(client, receiving)
    assert call(client, "patch", f"/users/{setup.person.id}", keys.admin_key, {"disabled": True}).status_code == 200
    push = {"method": "urn:ietf:rfc:8935", "endpoint_url": pushed.url, "authorization_header": pushed.authorization}
    changed = client.patch("/ssf/streams", json={"stream_id": sid, "delivery": push}, headers=bearer(receiving.token))
    assert changed.status_code == 200
    assert [list(claims["events"])[0] for claims in pushed.wait(2, timeout=5)] == [SESSION_REVOKED, ACCOUNT_DISABLED]


def test_deleting_the_receiving_application_or_a_subject_user_deletes_their_ssf_rows(
    client, setup, keys, receiving, world
):
    from authsvc.core.models import Application
    from authsvc.ssf.models import SsfStream, SsfSubject, SsfWaiting

    sid = poll_stream(client, receiving)
    other = world.user(setup.domain, "other@example.com")
    subject = {"stream_id": sid, "subject": {"format": "opaque", "id": str(other.id)}}
    assert client.post("/ssf/subjects/remove", json=subject, headers=bearer(receiving.token)).status_code == 204
    assert call(client, "patch", f"/users/{setup.person.id}", keys.admin_key, {"disabled": True}).status_code == 200
    assert call(client, "delete", f"/users/{other.id}", keys.admin_key).status_code in (200, 204)
    assert world.query(select(SsfSubject)) == []
    [application] = world.query(select(Application).where(Application.client_id == receiving.client_id))
    assert call(client, "delete", f"/oauth_apps/{application.id}", keys.admin_key).status_code in (200, 204)
    assert world.query(select(SsfStream)) == [] and world.query(select(SsfWaiting)) == []


def test_a_poll_that_asks_to_wait_is_answered_when_a_set_comes(make_app, setup, keys, world):
    """RFC 8936 2.4 returnImmediately false: held (up to AUTHSVC_SSF_POLL_WAIT) until there is something."""
    import threading
    import time

    from tests.helpers import HttpsClient
    from tests.helpers.ssf import receiver_token
    from tests.helpers.webhooks import CONFIG

    # A wait well past the change's time on a loaded machine: answered before it, the SET woke the poll.
    app = make_app(**CONFIG, AUTHSVC_SSF_POLL_WAIT=15)
    app.test_client_class = HttpsClient
    client = app.test_client()
    application, secret = world.application(
        setup.domain, confidential=True, service_account_id=setup.service.id, redirect_uris=[], scopes="ssf"
    )
    token = receiver_token(client, application.client_id, secret)
    made = client.post("/ssf/streams", json={"events_requested": [ACCOUNT_DISABLED]}, headers=bearer(token))
    sid = made.get_json()["stream_id"]
    started = time.monotonic()
    immediate = client.post(f"/ssf/poll/{sid}", json={"returnImmediately": True}, headers=bearer(token))
    assert immediate.get_json()["sets"] == {} and time.monotonic() - started < 2

    changed = []

    def disable() -> None:
        other = app.test_client()
        changed.append(
            call(other, "patch", f"/users/{setup.person.id}", keys.admin_key, {"disabled": True}).status_code
        )

    timer = threading.Timer(0.5, disable)
    timer.start()
    started = time.monotonic()
    held = client.post(f"/ssf/poll/{sid}", json={"returnImmediately": False}, headers=bearer(token))
    waited = time.monotonic() - started
    timer.join()
    assert changed == [200]
    assert len(held.get_json()["sets"]) == 1
    assert 0.4 < waited < 14


def test_logout_everywhere_is_a_session_revoked_the_person_initiated(client, setup, receiving, verifier, world):
    from tests.helpers import headers
    from tests.helpers.console import password_grant

    sid = poll_stream(client, receiving)
    robot = world.user(setup.domain, "robot@example.com", service_account=True)
    token = password_grant(client, setup.public_app.client_id, username="robot@example.com").get_json()
    response = client.post("/auth/logout/all", headers=headers(Authorization=f"Bearer {token['access_token']}"))
    assert response.status_code == 200
    [claims] = verified(verifier, poll(client, receiving, sid))
    assert claims["sub_id"]["sub"] == str(robot.id)
    assert claims["events"][SESSION_REVOKED]["initiating_entity"] == "user"


def test_logout_everywhere_without_a_live_token_is_still_a_session_revoked(client, setup, receiving, verifier):
    """Every session ended is the event, whether or not a token was live to revoke."""
    from tests.helpers import headers, signin
    from tests.helpers.pages import csrf_token

    sid = poll_stream(client, receiving)
    signin(client)
    page = client.get("/auth/login", headers=headers())
    assert client.post("/auth/logout/all", data={"csrf_token": csrf_token(page)}, headers=headers()).status_code == 303
    [claims] = verified(verifier, poll(client, receiving, sid))
    assert claims["sub_id"]["sub"] == str(setup.person.id)
    assert claims["events"][SESSION_REVOKED]["initiating_entity"] == "user"
