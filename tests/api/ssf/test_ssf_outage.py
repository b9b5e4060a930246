"""A push receiver that is down: its SETs wait in the outbox (SQL, so a restart loses none), are retried as
webhooks are, and arrive once each, in order per subject, from two instances' senders; a paused push stream
holds its SETs and sends them when enabled; a SET the receiver refuses (400) is kept as a dead letter."""

from __future__ import annotations

import time

from sqlalchemy import select

from authsvc.core.models import AuditRecord
from tests.helpers.admin_api import call
from tests.helpers.ssf import ACCOUNT_DISABLED, ACCOUNT_ENABLED, PUSH, bearer, events_of, ssf_sender
from tests.helpers.webhooks import CONFIG


def push_stream(client, receiving, pushed, events=(ACCOUNT_DISABLED, ACCOUNT_ENABLED)) -> str:
    body = {
        "events_requested": list(events),
        "delivery": {"method": PUSH, "endpoint_url": pushed.url, "authorization_header": pushed.authorization},
    }
    response = client.post("/ssf/streams", json=body, headers=bearer(receiving.token))
    assert response.status_code == 201, response.get_json()
    return response.get_json()["stream_id"]


def toggle(client, keys, user_id: int, times: int) -> None:
    for n in range(times):
        response = call(client, "patch", f"/users/{user_id}", keys.admin_key, {"disabled": n % 2 == 0})
        assert response.status_code == 200


def ssf_items(app):
    from authsvc.core.database import db
    from authsvc.outbox import OutboxItem

    with app.app_context():
        items = list(db.session.scalars(select(OutboxItem).where(OutboxItem.kind == "ssf").order_by(OutboxItem.id)))
        db.session.remove()
        return items


def test_a_receiver_down_gets_every_set_afterwards_once_and_in_order_from_two_instances(
    make_app, app, client, setup, keys, receiving, pushed, world
):
    push_stream(client, receiving, pushed)
    other = world.user(setup.domain, "other@example.com")
    pushed.stop()
    toggle(client, keys, setup.person.id, 6)
    toggle(client, keys, other.id, 6)
    # A new process of the service (as after a restart) and a second instance deliver what was queued.
    senders = [ssf_sender(make_app(**CONFIG), name="one"), ssf_sender(make_app(**CONFIG), name="two")]
    for sender in senders:
        sender.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum(item.attempts >= 2 for item in ssf_items(app)) < 2:
            time.sleep(0.05)
        assert not any(item.done_at for item in ssf_items(app)), "nothing is delivered while the receiver is down"
        pushed.start()
        received = pushed.wait(12, timeout=15)
    finally:
        for sender in senders:
            sender.stop()
    assert len(received) == 12
    assert len({claims["jti"] for claims in received}) == 12, "no SET arrives twice"
    for user_id in (setup.person.id, other.id):
        mine = [claims for claims in received if claims["sub_id"]["sub"] == str(user_id)]
        assert events_of(mine) == [ACCOUNT_DISABLED, ACCOUNT_ENABLED] * 3
    assert pushed.refused == []


def test_a_paused_push_stream_sends_what_it_held_when_enabled(client, setup, keys, receiving, pushed, worker):
    sid = push_stream(client, receiving, pushed)
    status = {"stream_id": sid, "status": "paused"}
    assert client.post("/ssf/status", json=status, headers=bearer(receiving.token)).status_code == 200
    toggle(client, keys, setup.person.id, 4)
    time.sleep(0.3)
    assert pushed.received == []
    status["status"] = "enabled"
    assert client.post("/ssf/status", json=status, headers=bearer(receiving.token)).status_code == 200
    assert events_of(pushed.wait(4, timeout=5)) == [ACCOUNT_DISABLED, ACCOUNT_ENABLED] * 2


def test_a_set_the_receiver_refuses_is_kept_as_a_dead_letter(app, client, setup, keys, receiving, pushed, worker):
    """A receiver that cannot verify a SET answers 400 (RFC 8935 2.3): retrying cannot help; it is given up."""
    push_stream(client, receiving, pushed)
    pushed.authorization = "Bearer rotated"  # the receiver no longer takes the header it gave
    pushed.take = lambda sent, body: (400, {"err": "authentication_failed", "description": "who are you"})
    toggle(client, keys, setup.person.id, 1)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(item.given_up_at for item in ssf_items(app)):
        time.sleep(0.05)
    [item] = ssf_items(app)
    assert item.given_up_at and item.payload and "authentication_failed" in item.last_error
    given_up = world_records(app)
    assert given_up and given_up[0].details["kind"] == "ssf"


def world_records(app):
    from authsvc.core.database import db

    with app.app_context():
        found = list(db.session.scalars(select(AuditRecord).where(AuditRecord.event == "outbox.given_up")))
        db.session.remove()
        return found


def test_a_set_queued_before_its_stream_was_paused_waits_for_it_once(app, client, setup, keys, receiving, pushed):
    sid = push_stream(client, receiving, pushed)
    toggle(client, keys, setup.person.id, 1)  # queued in the outbox, not yet sent (no sender runs)
    status = {"stream_id": sid, "status": "paused"}
    assert client.post("/ssf/status", json=status, headers=bearer(receiving.token)).status_code == 200
    # Handled twice (a sender that died before marking it done, and the one that took it over): held once.
    from authsvc.core.database import db
    from authsvc.ssf import push
    from authsvc.ssf.models import SsfWaiting

    [item] = ssf_items(app)
    with app.app_context():
        push.deliver(item)
        push.deliver(item)
        assert len(list(db.session.scalars(select(SsfWaiting)))) == 1
        db.session.remove()
    sender = ssf_sender(app)
    sender.run_once()
    assert pushed.received == [] and all(item.done_at for item in ssf_items(app))
    status["status"] = "enabled"
    assert client.post("/ssf/status", json=status, headers=bearer(receiving.token)).status_code == 200
    while sender.run_once():
        pass
    assert events_of(pushed.wait(1, timeout=5)) == [ACCOUNT_DISABLED]
