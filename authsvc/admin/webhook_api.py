"""The admin API's webhooks: /api/engine/v2/domains/{id}/webhooks (list, subscribe), each webhook's read,
change, secret rotation and deletion, and the dead letters with their replay (docs/events.md). Routes on the
admin API's blueprint (authsvc.admin.api)."""

from __future__ import annotations

from flask import Response, jsonify

from authsvc import admin
from authsvc.admin import webhooks
from authsvc.admin.api import _created, body, bp, current_actor
from authsvc.core.headers import no_store
from authsvc.core.models import Domain


@bp.get("/domains/<record_id>/webhooks")
@no_store
def list_webhooks(record_id: str) -> Response:
    """The domain's webhooks, oldest first (never their secrets)."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    return jsonify(items=[endpoint.as_json() for endpoint in webhooks.listing(actor, domain)])


@bp.post("/domains/<record_id>/webhooks")
@no_store
def create_webhook(record_id: str) -> Response:
    """Subscribe a URL to event types; the signing secret is in the answer, once."""
    actor = current_actor()
    endpoint, secret = webhooks.create_webhook(actor, admin.get(actor, Domain, record_id), body())
    return _created(endpoint.as_json() | {"secret": secret})


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


@bp.delete("/domains/<record_id>/webhooks/<webhook_id>")
@no_store
def delete_webhook(record_id: str, webhook_id: str) -> Response:
    actor = current_actor()
    endpoint = webhooks.of_domain(actor, admin.get(actor, Domain, record_id), webhook_id)
    webhooks.delete_webhook(actor, endpoint)
    return jsonify(deleted=webhook_id)
