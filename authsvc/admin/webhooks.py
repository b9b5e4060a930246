"""A domain's webhooks (authsvc.webhooks): admins subscribe URLs, change, rotate and delete them, and replay
what was dead-lettered; support users read. Every change is audited; a secret never is, and is shown once."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from authsvc.admin.actors import Actor, audit_change, get, require_change
from authsvc.admin.schemas import read
from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.errors import NotFound, ValidationFailed
from authsvc.core.models import Domain
from authsvc.core.settings import settings
from authsvc.outbox import OutboxItem, claims
from authsvc.webhooks.events import KIND, note_types
from authsvc.webhooks.models import WebhookEndpoint

MAX_DEAD_LETTERS = 500


def _target(endpoint: WebhookEndpoint) -> str:
    return f"webhook:{endpoint.id}"


def _checked_url(url: str) -> str:
    """The URL, if the destination rules let it be called (the address is checked again on every delivery)."""
    try:
        return validation.client_url(url, "url", allow_private=settings().backchannel_allow_private_networks)
    except validation.Invalid as exc:
        raise ValidationFailed({"url": str(exc)}) from None


def create_webhook(actor: Actor, domain: Domain, data: Any) -> tuple[WebhookEndpoint, str]:
    """Subscribe a URL to event types; the endpoint and its secret (to show once)."""
    from authsvc.admin.schemas.webhooks import WebhookCreate

    require_change(actor, domain.id)
    values = read(WebhookCreate, data)
    endpoint, secret = WebhookEndpoint.create(domain.id, _checked_url(values.url), values.events)
    db.session.add(endpoint)
    note_types(domain.id)
    audit_change(actor, "webhook.created", domain.id, _target(endpoint), after=endpoint.as_json())
    db.session.commit()
    return endpoint, secret


def of_domain(actor: Actor, domain: Domain, webhook_id: str) -> WebhookEndpoint:
    """The domain's webhook ``webhook_id`` (as the actor may read it); else NotFound."""
    endpoint: WebhookEndpoint = get(actor, WebhookEndpoint, webhook_id)
    if endpoint.domain_id != domain.id:
        raise NotFound()
    return endpoint


def listing(actor: Actor, domain: Domain) -> list[WebhookEndpoint]:
    if not actor.can_read(domain.id):
        raise NotFound()
    query = select(WebhookEndpoint).where(WebhookEndpoint.domain_id == domain.id)
    return list(db.session.scalars(query.order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)))


def update_webhook(actor: Actor, endpoint: WebhookEndpoint, data: Any) -> WebhookEndpoint:
    from authsvc.admin.schemas.webhooks import WebhookChange

    require_change(actor, endpoint.domain_id)
    values = read(WebhookChange, data).given()
    before = endpoint.as_json()
    if values.get("url") is not None:
        endpoint.url = _checked_url(values["url"])
    if values.get("events") is not None:
        endpoint.events = " ".join(values["events"])
    if values.get("enabled") is not None:
        endpoint.enabled = values["enabled"]
    note_types(endpoint.domain_id)
    audit_change(actor, "webhook.updated", endpoint.domain_id, _target(endpoint), before, endpoint.as_json())
    db.session.commit()
    return endpoint


def rotate_webhook_secret(actor: Actor, endpoint: WebhookEndpoint) -> str:
    """A new secret (shown once); the previous one signs too for AUTHSVC_WEBHOOK_SECRET_OVERLAP seconds."""
    require_change(actor, endpoint.domain_id)
    secret = endpoint.rotate(settings().webhook_secret_overlap)
    audit_change(actor, "webhook.secret_rotated", endpoint.domain_id, _target(endpoint), after=endpoint.as_json())
    db.session.commit()
    return secret


def delete_webhook(actor: Actor, endpoint: WebhookEndpoint) -> None:
    """Delete the endpoint: what is queued for it is dropped when its turn comes."""
    require_change(actor, endpoint.domain_id)
    audit_change(actor, "webhook.deleted", endpoint.domain_id, _target(endpoint), before=endpoint.as_json())
    db.session.delete(endpoint)
    note_types(endpoint.domain_id)
    db.session.commit()


def dead_letters(actor: Actor, domain: Domain) -> list[dict[str, Any]]:
    """The domain's deliveries given up (kept a week, authsvc.outbox.claims), oldest first."""
    if not actor.can_read(domain.id):
        raise NotFound()
    query = (
        select(OutboxItem)
        .where(
            OutboxItem.kind == KIND,
            OutboxItem.domain_id == domain.id,
            OutboxItem.given_up_at.is_not(None),
            OutboxItem.payload.is_not(None),
        )
        .order_by(OutboxItem.id)
        .limit(MAX_DEAD_LETTERS)
    )
    found = []
    for item in db.session.scalars(query):
        message = json.loads(item.read())
        found.append(
            {
                "id": str(item.id),
                "webhook": message["endpoint"],
                "type": message["type"],
                "webhook_id": message["id"],
                "attempts": item.attempts,
                "last_error": item.last_error,
                "created_at": item.created_at,
                "given_up_at": item.given_up_at,
            }
        )
    return found


def replay(actor: Actor, domain: Domain, delivery_id: str) -> None:
    """Try a dead-lettered delivery again from now, as new (same webhook-id); NotFound if there is none."""
    require_change(actor, domain.id)
    item_id = validation.record_id(delivery_id)
    if item_id is None or not claims.replay(KIND, item_id, domain.id):
        raise NotFound()
    audit_change(actor, "webhook.replayed", domain.id, f"outbox:{item_id}")
    db.session.commit()
