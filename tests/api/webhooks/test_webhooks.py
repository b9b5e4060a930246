"""Signed webhooks: an admin subscribes a URL; each change of the subscribed types is queued with the change,
POSTed as Standard Webhooks say (verified here by the standardwebhooks library), in order per subject, and
tried again until the receiver takes it. The receivers are HTTP servers on loopback; the senders are the
service's own, two of them on one database where two instances would be."""

from __future__ import annotations

import json
import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from tests.helpers import HOST, HttpsClient, console
from tests.helpers.admin_api import call
from tests.helpers.console import as_admin
from tests.helpers.webhooks import CONFIG, Receiver, deliver, deliveries, webhook_sender


def subscribe(client, keys, domain, url: str, events: list[str]) -> dict:
    response = call(client, "post", f"/domains/{domain.id}/webhooks", keys.admin_key, {"url": url, "events": events})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def rename(client, keys, user_id: int, name: str) -> None:
    response = call(client, "patch", f"/users/{user_id}", keys.admin_key, {"name": name})
    assert response.status_code == 200, response.get_json()


def verified(secret: str, entry: dict) -> dict:
    return Webhook(secret).verify(entry["body"], entry["headers"])


def test_a_change_is_posted_signed_as_standard_webhooks_say(app, client, setup, keys, receiver):
    hook = subscribe(client, keys, setup.domain, receiver.url, ["user.created", "user.disabled"])
    assert hook["secret"].startswith("whsec_") and hook["events"] == ["user.created", "user.disabled"]
    made = call(client, "post", "/users", keys.admin_key, {"email": "new@example.com", "password": "Correct-Horse-9"})
    assert made.status_code == 201
    rename(client, keys, setup.person.id, "Not subscribed")
    assert call(client, "patch", f"/users/{setup.person.id}", keys.admin_key, {"disabled": True}).status_code == 200
    deliver(app)
    # Two subjects: delivered side by side, in either order.
    created, disabled = sorted(receiver.wait(2), key=lambda entry: json.loads(entry["body"])["type"])
    event = verified(hook["secret"], created)
    assert event["type"] == "user.created"
    assert event["data"]["subject"] == f"user:{made.get_json()['id']}"
    assert event["data"]["details"]["after"]["email"] == "new@example.com"
    assert "password" not in json.dumps(event) and "Correct-Horse-9" not in created["body"]
    assert verified(hook["secret"], disabled)["type"] == "user.disabled"
    assert created["headers"]["webhook-id"] != disabled["headers"]["webhook-id"]
    # Anyone without the secret cannot make a delivery the receiver accepts.
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=").verify(created["body"], created["headers"])
    tampered = created["body"].replace("new@example.com", "evil@example.com")
    with pytest.raises(WebhookVerificationError):
        Webhook(hook["secret"]).verify(tampered, created["headers"])


def test_an_event_is_queued_with_its_change_and_only_if_that_commits(app, client, setup, keys, receiver):
    """The delivery joins the transaction of the change's audit record: rolled back with it, committed with it."""
    from authsvc.core import audit
    from authsvc.core.database import db

    subscribe(client, keys, setup.domain, receiver.url, ["user.deleted"])
    with app.app_context():
        audit.record("user.deleted", domain_id=setup.domain.id, actor="cli", target="user:99", commit=False)
        db.session.rollback()
        assert deliveries(app) == []
        audit.record("user.deleted", domain_id=setup.domain.id, actor="cli", target="user:99")
        db.session.remove()
    [queued] = deliveries(app)
    assert queued.ordering_key.endswith(":user:99")


def test_after_a_rotation_both_secrets_verify_until_the_overlap_ends(make_app, setup, keys, receiver, clock):
    app = make_app(**CONFIG, AUTHSVC_WEBHOOK_SECRET_OVERLAP=60)
    app.test_client_class = HttpsClient
    client = app.test_client()
    hook = subscribe(client, keys, setup.domain, receiver.url, ["user.updated"])
    rotated = call(client, "post", f"/domains/{setup.domain.id}/webhooks/{hook['id']}/rotate", keys.admin_key)
    assert rotated.status_code == 200
    new = rotated.get_json()["secret"]
    assert new != hook["secret"] and rotated.get_json()["previous_secret_until"]
    rename(client, keys, setup.person.id, "Renamed")
    deliver(app)
    [during] = receiver.wait(1)
    assert len(during["headers"]["webhook-signature"].split(" ")) == 2
    assert verified(hook["secret"], during) == verified(new, during)
    clock.advance(61)
    rename(client, keys, setup.person.id, "Renamed again")
    deliver(app)
    after = receiver.wait(2)[1]
    assert verified(new, after)["data"]["details"]["after"]["name"] == "Renamed again"
    with pytest.raises(WebhookVerificationError):
        verified(hook["secret"], after)


def test_a_receiver_down_gets_every_event_afterwards_once_and_in_order_from_two_instances(
    make_app, app, client, setup, keys, receiver, world
):
    """Two instances' senders run their own threads; the receiver is down while the changes are made and for
    some failed tries of each, then up: every event arrives once (by webhook-id), each subject's in order."""
    hook = subscribe(client, keys, setup.domain, receiver.url, ["user.updated"])
    other = world.user(setup.domain, "other@example.com")
    receiver.stop()
    names = [f"Name {n}" for n in range(6)]
    for name in names:
        rename(client, keys, setup.person.id, name)
        rename(client, keys, other.id, name)
    senders = [webhook_sender(app, name="one"), webhook_sender(make_app(**CONFIG), name="two")]
    for sender in senders:
        sender.start()
    try:
        deadline = time.monotonic() + 10
        # The first event of each subject tried (and failed) twice at least; those after it wait their turn.
        while time.monotonic() < deadline and sum(i.attempts >= 2 for i in deliveries(app)) < 2:
            time.sleep(0.05)
        waiting = deliveries(app)
        assert not any(item.done_at for item in waiting), "nothing is delivered while the receiver is down"
        assert sorted(item.attempts for item in waiting)[-2:] >= [2, 2]
        assert sum(item.attempts > 0 for item in waiting) == 2, "one subject's events are tried one at a time"
        receiver.start()
        received = receiver.wait(12, timeout=10)
        time.sleep(0.3)  # time for a second copy to arrive, if one were sent
    finally:
        for sender in senders:
            sender.stop()
    assert len(receiver.received) == 12
    ids = [entry["headers"]["webhook-id"] for entry in received]
    assert len(set(ids)) == 12, "each event once"
    by_subject: dict[str, list[str]] = {}
    for entry in received:
        event = verified(hook["secret"], entry)
        by_subject.setdefault(event["data"]["subject"], []).append(event["data"]["details"]["after"]["name"])
    assert by_subject == {f"user:{setup.person.id}": names, f"user:{other.id}": names}
    assert {item.claimed_by.split(":")[0] for item in deliveries(app)} <= {"one", "two"}


def test_a_receiver_that_hangs_holds_up_no_other(make_app, client, setup, keys, receiver):
    """The hanging receiver holds its delivery until the outbound deadline, which ends it; the other webhook's
    events arrive meanwhile, one after the other."""
    app = make_app(**{**CONFIG, "AUTHSVC_OUTBOUND_DEADLINE": 3})
    hanging = Receiver(hang=5)
    try:
        slow = subscribe(client, keys, setup.domain, hanging.url, ["user.updated"])
        subscribe(client, keys, setup.domain, receiver.url, ["user.updated"])
        sender = webhook_sender(app)
        sender.start()
        try:
            rename(client, keys, setup.person.id, "First")
            rename(client, keys, setup.person.id, "Second")
            assert len(receiver.wait(2, timeout=6)) == 2
            held = [item for item in deliveries(app) if slow["id"] in item.ordering_key]
            assert [(item.attempts, item.done_at) for item in held] == [(0, None), (0, None)], "still in its try"
            assert held[0].claimed_by and not held[1].claimed_by

            def first():
                return next(item for item in deliveries(app) if item.id == held[0].id)

            deadline = time.monotonic() + 6
            while time.monotonic() < deadline and not first().attempts:
                time.sleep(0.05)
            assert first().last_error == "Undelivered: DeadlineExceeded"
        finally:
            sender.stop()
    finally:
        hanging.stop()


def test_a_delivery_given_up_is_a_dead_letter_to_replay(make_app, client, setup, keys, receiver, clock):
    app = make_app(**CONFIG, AUTHSVC_WEBHOOK_GIVE_UP=60)
    hook = subscribe(client, keys, setup.domain, receiver.url, ["user.updated"])
    receiver.status = 500
    rename(client, keys, setup.person.id, "Lost for now")
    deliver(app, rounds=1)
    clock.advance(61)
    deliver(app, rounds=1)
    [item] = deliveries(app)
    assert item.given_up_at and item.last_error == "Undelivered: HTTP 500"
    # A later event of the same subject is no longer held back by it.
    rename(client, keys, setup.person.id, "Later")
    receiver.status = 200
    deliver(app)
    [later] = receiver.wait(1)
    assert verified(hook["secret"], later)["data"]["details"]["after"]["name"] == "Later"
    path = f"/domains/{setup.domain.id}/webhooks/dead_letters"
    [dead] = call(client, "get", path, keys.support_key).get_json()["items"]
    assert dead["webhook"] == hook["id"] and dead["type"] == "user.updated" and dead["attempts"] == 2
    assert call(client, "post", f"{path}/{dead['id']}/replay", keys.support_key).status_code == 403
    assert call(client, "post", f"{path}/{dead['id']}/replay", keys.admin_key).status_code == 200
    assert call(client, "post", f"{path}/{dead['id']}/replay", keys.admin_key).status_code == 404
    deliver(app)
    replayed = receiver.wait(2)[1]
    assert replayed["headers"]["webhook-id"] == dead["webhook_id"]
    assert verified(hook["secret"], replayed)["data"]["details"]["after"]["name"] == "Lost for now"
    assert call(client, "get", path, keys.admin_key).get_json()["items"] == []


def test_a_private_destination_needs_the_operators_setting(make_app, client, setup, keys, receiver):
    hook = subscribe(client, keys, setup.domain, receiver.url, ["user.updated"])
    rename(client, keys, setup.person.id, "Refused")
    strict = make_app(**{**CONFIG, "AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS": False})
    deliver(strict)
    [item] = deliveries(strict)
    assert item.given_up_at and "outbound rules" in item.last_error and receiver.received == []
    strict.test_client_class = type(client)
    refused = call(
        strict.test_client(),
        "post",
        f"/domains/{setup.domain.id}/webhooks",
        keys.admin_key,
        {"url": receiver.url, "events": ["user.updated"]},
    )
    assert refused.status_code == 422 and "url" in refused.get_json()["fields"]
    assert hook["id"]


@pytest.mark.parametrize(
    "body,field",
    [
        ({"url": "https://hooks.example.com/x", "events": []}, "events"),
        ({"url": "https://hooks.example.com/x", "events": ["user.exploded"]}, "events"),
        ({"url": "https://hooks.example.com/x", "events": "user.created"}, "events"),
        ({"url": "ftp://hooks.example.com/x", "events": ["user.created"]}, "url"),
        ({"events": ["user.created"]}, "url"),
    ],
)
def test_a_bad_subscription_is_refused_field_by_field(client, setup, keys, body, field):
    response = call(client, "post", f"/domains/{setup.domain.id}/webhooks", keys.admin_key, body)
    assert response.status_code == 422 and field in response.get_json()["fields"]


def test_webhooks_are_a_domain_admins_to_manage_and_never_show_a_secret_again(client, setup, keys, receiver):
    path = f"/domains/{setup.domain.id}/webhooks"
    body = {"url": receiver.url, "events": ["signin.failed"]}
    assert call(client, "post", path, keys.support_key, body).status_code == 403
    hook = subscribe(client, keys, setup.domain, receiver.url, ["signin.failed"])
    [listed] = call(client, "get", path, keys.support_key).get_json()["items"]
    assert listed["id"] == hook["id"] and "secret" not in listed
    assert call(client, "get", f"{path}/{hook['id']}", keys.admin_key, host="other.example.com").status_code in (
        401,
        404,
    )
    changed = call(
        client, "patch", f"{path}/{hook['id']}", keys.admin_key, {"enabled": False, "events": ["user.deleted"]}
    )
    assert changed.get_json()["enabled"] is False and changed.get_json()["events"] == ["user.deleted"]
    assert call(client, "delete", f"{path}/{hook['id']}", keys.admin_key).status_code == 200
    assert call(client, "get", f"{path}/{hook['id']}", keys.admin_key).status_code == 404


def test_the_command_line_subscribes_and_prints_the_secret_once(app, setup, receiver, client):
    runner = app.test_cli_runner()
    result = runner.invoke(
        args=["webhooks", "create", "--domain", HOST, "--url", receiver.url, "--events", "user.created user.disabled"]
    )
    assert result.exit_code == 0, result.output
    made = json.loads(result.output)
    assert set(made) == {"id", "secret"} and made["secret"].startswith("whsec_")
    listed = json.loads(runner.invoke(args=["webhooks", "list", "--domain", HOST]).output)
    assert listed["webhooks"][0]["events"] == ["user.created", "user.disabled"]
    assert made["secret"] not in json.dumps(listed)


def test_a_failed_sign_in_is_an_event_of_the_user(app, client, setup, keys, receiver):
    from tests.helpers import headers

    hook = subscribe(client, keys, setup.domain, receiver.url, ["signin.failed", "signin.succeeded"])
    query = {"email": "person@example.com", "password": "wrong"}
    assert client.post("/auth/signin", query_string=query, headers=headers()).status_code in (400, 401)
    deliver(app)
    [failed] = receiver.wait(1)
    event = verified(hook["secret"], failed)
    assert event["type"] == "signin.failed" and event["data"]["subject"] == f"user:{setup.person.id}"


def test_the_console_shows_dead_letters_and_replays_one(make_app, client, setup, keys, receiver, clock):
    app = make_app(**CONFIG, AUTHSVC_WEBHOOK_GIVE_UP=60)
    subscribe(client, keys, setup.domain, receiver.url, ["user.updated"])
    receiver.status = 503
    rename(client, keys, setup.person.id, "Lost for now")
    deliver(app, rounds=1)
    clock.advance(61)
    deliver(app, rounds=1)
    [item] = deliveries(app)
    support = as_admin(client.application.test_client(), "support@example.com")
    page = console.get(support, f"/domains/{setup.domain.id}/webhooks")
    assert page.status_code == 200 and "Undelivered: HTTP 503" in console.text(page)
    replay = f"/domains/{setup.domain.id}/webhooks/dead_letters/{item.id}/replay"
    assert console.get(support, replay).status_code == 403
    admin = as_admin(client)
    assert console.submit(admin, replay).status_code == 303
    receiver.status = 200
    deliver(app)
    assert len(receiver.wait(1)) == 1


def test_a_subscription_takes_effect_at_the_next_event_and_an_unsubscribed_one_reads_no_webhook(
    app, client, setup, keys, receiver, monkeypatch
):
    """The domain's row, read with every request, says which types its webhooks take: an event of another
    type costs no read of them, and a change of the subscriptions holds from the next request on."""
    from tests.helpers import headers
    from tests.helpers.counting import trips

    def fail_a_sign_in() -> list[str]:
        query = {"email": "person@example.com", "password": "wrong"}
        with trips(app, monkeypatch) as counted:
            assert client.post("/auth/signin", query_string=query, headers=headers()).status_code in (400, 401)
        return [sql for sql in counted.sql if "webhook_endpoint" in sql]

    assert fail_a_sign_in() == [] and deliveries(app) == []
    hook = subscribe(client, keys, setup.domain, receiver.url, ["signin.failed"])
    assert fail_a_sign_in() != [] and len(deliveries(app)) == 1
    path = f"/domains/{setup.domain.id}/webhooks/{hook['id']}"
    changed = call(client, "patch", path, keys.admin_key, {"events": ["signin.succeeded"]})
    assert changed.status_code == 200, changed.get_json()
    assert fail_a_sign_in() == [] and len(deliveries(app)) == 1
    assert call(client, "delete", path, keys.admin_key).status_code == 200
    with app.app_context():
        from authsvc.core.database import db
        from authsvc.core.models import Domain

        assert db.session.get(Domain, setup.domain.id).webhook_events is None
