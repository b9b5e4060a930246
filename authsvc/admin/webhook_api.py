"""The admin API's webhooks: /api/engine/v2/domains/{id}/webhooks (list, subscribe), each webhook's read,
change, secret rotation and deletion, and the dead letters with their replay (docs/events.md). Routes on the
admin API's blueprint (authsvc.admin.api)."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify

from authsvc import admin
from authsvc.admin import webhooks
from authsvc.admin.actors import Actor
from authsvc.admin.api import body, bp, current_actor
from authsvc.admin.domain_collections import domain_collection
from authsvc.core.headers import no_store
from authsvc.core.models import Domain
from authsvc.webhooks.models import WebhookEndpoint


def _create(actor: Actor, domain: Domain, data: Any) -> dict[str, Any]:
    """Subscribe a URL to event types; the signing secret is in the answer, once."""
    endpoint, secret = webhooks.create_webhook(actor, domain, data)
    return endpoint.as_json() | {"secret": secret}


def _delete(actor: Actor, endpoint: WebhookEndpoint) -> dict[str, Any]:
    webhooks.delete_webhook(actor, endpoint)
    return {"deleted": str(endpoint.id)}


# The domain's webhooks, oldest first (never their secrets).
domain_collection(
    "webhooks", "webhook_id", listing=webhooks.listing, create=_create, find=webhooks.of_domain, remove=_delete
)


@bp.get("/domains/<record_id>/webhooks/dead_letters")
@no_store
def list_dead_letters(record_id: str) -> Response:
    """The deliveries given up after AUTHSVC_WEBHOOK_GIVE_UP, oldest first."""
    actor = current_actor()
    return jsonify(items=webhooks.dead_letters(actor, admin.get(actor, Domain, record_id)))


@bp.post("/domains/<record_id>/webhooks/dead_letters/<delivery_id>/replay")
@no_store
def replay_dead_letter(record_id: str, delivery_id: str) -> Response:
    """Try a dead-lettered delivery again, from now, with its webhook-id."""
    actor = current_actor()
    webhooks.replay(actor, admin.get(actor, Domain, record_id), delivery_id)
    return jsonify(replayed=delivery_id)


@bp.get("/domains/<record_id>/webhooks/<webhook_id>")
@no_store
def get_webhook(record_id: str, webhook_id: str) -> Response:
    actor = current_actor()
    return jsonify(webhooks.of_domain(actor, admin.get(actor, Domain, record_id), webhook_id).as_json())


@bp.patch("/domains/<record_id>/webhooks/<webhook_id>")
@no_store
def update_webhook(record_id: str, webhook_id: str) -> Response:
    """Change the URL, the event types, or whether it is enabled."""
    actor = current_actor()
    endpoint = webhooks.of_domain(actor, admin.get(actor, Domain, record_id), webhook_id)
    return jsonify(webhooks.update_webhook(actor, endpoint, body()).as_json())


@bp.post("/domains/<record_id>/webhooks/<webhook_id>/rotate")
@no_store
def rotate_webhook_secret(record_id: str, webhook_id: str) -> Response:
    """A new signing secret, in the answer once; the previous one signs too for a while."""
    actor = current_actor()
    endpoint = webhooks.of_domain(actor, admin.get(actor, Domain, record_id), webhook_id)
    secret = webhooks.rotate_webhook_secret(actor, endpoint)
    return jsonify(endpoint.as_json() | {"secret": secret})
