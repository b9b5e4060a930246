"""Webhooks in the console: an admin subscribes a URL (the secret shown once, on the answer to the form),
rotates its secret (two secrets sign until the overlap ends), deletes it, and replays what was given up,
through the admin API's verbs: the same validation, audit records and permission checks. Support users see
the lists without forms. The deliveries go to a receiver on loopback and are verified with the secrets the
pages showed."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select
from standardwebhooks import Webhook, WebhookVerificationError

from authsvc.core.models import AuditRecord
from authsvc.webhooks.models import WebhookEndpoint
from tests.helpers import HOST, OTHER_HOST, HttpsClient, headers, in_one_pass
from tests.helpers.admin_api import call
from tests.helpers.console import SECRET, as_admin, audit, get, submit, text
from tests.helpers.webhooks import CONFIG, deliver

pytestmark = in_one_pass("sqlite")  # the pages over the admin verbs the API tests check on both backends


def hooks_path(setup) -> str:
    return f"/domains/{setup.domain.id}/webhooks"


def endpoints(world, setup) -> list[WebhookEndpoint]:
    return world.query(select(WebhookEndpoint).where(WebhookEndpoint.domain_id == setup.domain.id))


def shown_secret(response) -> str:
    [secret] = re.findall(SECRET, response.get_data(as_text=True))
    return secret


def rename(client, keys, user_id: int, name: str) -> None:
    assert call(client, "patch", f"/users/{user_id}", keys.admin_key, {"name": name}).status_code == 200


def test_an_admin_subscribes_a_url_and_its_secret_is_shown_once_and_verifies(app, client, world, setup, keys, receiver):
    as_admin(client)
    path = hooks_path(setup)
    page = get(client, path)
    assert page.status_code == 200 and "No webhooks." in text(page)
    assert "<legend>Event types</legend>" in text(page) and '<label for="url">URL</label>' in text(page)
    created = submit(client, path, {"url": receiver.url, "events": ["user.updated", "user.deleted"]}, page=page)
    assert created.status_code == 200 and "no-store" in created.headers["Cache-Control"]
    secret = shown_secret(created)
    assert secret.startswith("whsec_")
    [endpoint] = endpoints(world, setup)
    assert (endpoint.url, endpoint.event_types()) == (receiver.url, ["user.updated", "user.deleted"])
    listed = text(get(client, path))
    assert receiver.url in listed and "user.updated, user.deleted" in listed and secret not in listed
    [record] = audit(world, "webhook.created")
    assert record.actor == f"user:{keys.admin_user.id}" and secret not in str(record.details)
    rename(client, keys, setup.person.id, "Subscribed in the console")
    deliver(app)
    [delivery] = receiver.wait(1)
    event = Webhook(secret).verify(delivery["body"], delivery["headers"])
    assert event["data"]["details"]["after"]["name"] == "Subscribed in the console"


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"url": "ftp://hooks.example.com/", "events": ["user.created"]}, "url", "https"),
        ({"url": "https://hooks.example.com/authsvc"}, "events", "must not be empty"),
        ({"url": "https://hooks.example.com/authsvc", "events": ["user.exploded"]}, "events", "unknown event type"),
    ],
)
def test_a_refused_subscription_is_shown_by_its_field_and_nothing_is_saved(
    client, world, setup, people, data, field, message
):
    as_admin(client)
    refused = submit(client, hooks_path(setup), data)
    assert refused.status_code == 422
    shown = text(refused)
    assert message in shown and 'class="field-error"' in shown
    assert endpoints(world, setup) == []


def test_a_missing_or_forged_csrf_token_changes_nothing(client, world, setup, people, receiver):
    as_admin(client)
    for token in ("", "forged"):
        data = {"url": receiver.url, "events": ["user.created"]}
        refused = submit(client, hooks_path(setup), data, token=token)
        assert refused.status_code == 400 and "The form expired" in text(refused)
    assert endpoints(world, setup) == []


def test_a_rotation_asks_first_then_both_secrets_sign_until_the_overlap_ends(
    make_app, world, setup, keys, receiver, clock
):
    app = make_app(**CONFIG, AUTHSVC_WEBHOOK_SECRET_OVERLAP=120)
    app.test_client_class = HttpsClient
    client = as_admin(app.test_client())
    path = hooks_path(setup)
    first = shown_secret(submit(client, path, {"url": receiver.url, "events": ["user.updated"]}))
    [endpoint] = endpoints(world, setup)
    rotate = f"{path}/{endpoint.id}/rotate"
    confirm = get(client, rotate)
    assert confirm.status_code == 200 and "For 2 min every delivery" in text(confirm)
    assert [e.secret_encrypted for e in endpoints(world, setup)] == [endpoint.secret_encrypted], "not yet"
    rotated = submit(client, rotate, page=confirm)
    assert rotated.status_code == 200 and "no-store" in rotated.headers["Cache-Control"]
    second = shown_secret(rotated)
    assert second != first and "the previous secret signs too" in text(rotated)
    assert "two secrets until" in text(get(client, path))
    assert [r.actor for r in audit(world, "webhook.secret_rotated")] == [f"user:{keys.admin_user.id}"]
    rename(client, keys, setup.person.id, "During the overlap")
    deliver(app)
    [during] = receiver.wait(1)
    assert Webhook(first).verify(during["body"], during["headers"]) == Webhook(second).verify(
        during["body"], during["headers"]
    )
    clock.advance(121)
    assert "two secrets until" not in text(get(client, path))
    rename(client, keys, setup.person.id, "After the overlap")
    deliver(app)
    after = receiver.wait(2)[1]
    assert Webhook(second).verify(after["body"], after["headers"])["data"]["details"]["after"]["name"] == (
        "After the overlap"
    )
    with pytest.raises(WebhookVerificationError):
        Webhook(first).verify(after["body"], after["headers"])


def test_deleting_a_webhook_asks_first_and_it_gets_nothing_more(app, client, world, setup, keys, receiver):
    as_admin(client)
    path = hooks_path(setup)
    submit(client, path, {"url": receiver.url, "events": ["user.updated"]})
    [endpoint] = endpoints(world, setup)
    assert f"{path}/{endpoint.id}/delete" in get(client, path).get_data(as_text=True), "a link, not a form"
    confirm = get(client, f"{path}/{endpoint.id}/delete")
    assert confirm.status_code == 200 and f"Delete the webhook to {receiver.url}?" in text(confirm)
    assert endpoints(world, setup), "nothing deleted yet"
    deleted = submit(client, f"{path}/{endpoint.id}/delete", page=confirm)
    assert deleted.status_code == 303
    assert endpoints(world, setup) == []
    assert f"Webhook {endpoint.id} deleted." in text(client.get(deleted.headers["Location"], headers=headers()))
    assert [r.actor for r in audit(world, "webhook.deleted")] == [f"user:{keys.admin_user.id}"]
    rename(client, keys, setup.person.id, "Nobody listens")
    deliver(app)
    assert receiver.wait(1, timeout=0.5) == []


def test_support_reads_without_forms_and_other_domains_see_nothing(client, world, setup, people, receiver):
    admin = as_admin(client.application.test_client())
    path = hooks_path(setup)
    submit(admin, path, {"url": receiver.url, "events": ["user.updated"]})
    [endpoint] = endpoints(world, setup)
    support = as_admin(client, "support@example.com")
    page = get(support, path)
    assert page.status_code == 200 and receiver.url in text(page)
    assert "<form" not in page.get_data(as_text=True).split("<main", 1)[-1].split("</main>", 1)[0]
    assert "Rotate secret" not in text(page) and "Delete…" not in text(page)
    for action in ("rotate", "delete"):
        assert get(support, f"{path}/{endpoint.id}/{action}").status_code == 403
    token_page = get(admin, path)
    refused = submit(support, path, {"url": receiver.url, "events": ["user.created"]}, page=token_page)
    assert refused.status_code in (400, 403)
    assert len(endpoints(world, setup)) == 1
    other = as_admin(client.application.test_client(), "admin@other.example.com", host=OTHER_HOST)
    assert get(other, path, host=OTHER_HOST).status_code == 404
    assert get(other, f"{path}/{endpoint.id}/rotate", host=OTHER_HOST).status_code == 404
    assert world.query(select(AuditRecord).where(AuditRecord.event == "webhook.secret_rotated")) == []
    assert HOST != OTHER_HOST
