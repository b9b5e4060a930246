"""Which audit records are webhook events, what an event's body holds, and queueing its deliveries.

One rule for every event: ``queue_deliveries`` listens to each audit record
of an event ``FROM_AUDIT`` names as it joins its transaction
(authsvc.core.audit.on_record: a record of any other event, a token's, never
calls it); such a record is queued, in that transaction, for every enabled
endpoint of its domain subscribed to its type. So an event exists once, and
only if, the change it reports is committed; and a change audited later by a
new code path is delivered without a word here, if its record's event is
named below. docs/events.md lists the types and their bodies.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import inspect, select, update

from authsvc import outbox
from authsvc.core import clock
from authsvc.core.audit import Recorded
from authsvc.core.database import db
from authsvc.core.models import Domain
from authsvc.core.request_state import state_if_in_request
from authsvc.webhooks.models import WebhookEndpoint

KIND = "webhook"

# Every event type, as an admin subscribes to it.
TYPES = (
    "user.created",
    "user.updated",
    "user.disabled",
    "user.enabled",
    "user.deleted",
    "signin.succeeded",
    "signin.failed",
    "factor.added",
    "factor.removed",
    "session.ended",
    "token.revoked",
    "api_key.revoked",
    "application.created",
    "application.updated",
    "application.deleted",
    "sso_provider.created",
    "sso_provider.updated",
    "sso_provider.deleted",
)

# The audit events (docs/operations.md#audit-events) each type is made of.
FROM_AUDIT: dict[str, str] = {
    "user.created": "user.created",
    "user.signed_up": "user.created",
    "scim.user.created": "user.created",
    "user.updated": "user.updated",
    "scim.user.replaced": "user.updated",
    "scim.user.patched": "user.updated",
    "user.email_changed": "user.updated",
    "user.email_verified": "user.updated",
    "user.name_changed": "user.updated",
    "user.password_changed": "user.updated",
    "user.password_reset": "user.updated",
    "scim.user.deactivated": "user.disabled",
    "user.deleted": "user.deleted",
    "scim.user.deleted": "user.deleted",
    "signin.succeeded": "signin.succeeded",
    "sso.signin": "signin.succeeded",
    "saml.signin": "signin.succeeded",
    "signin.failed": "signin.failed",
    "mfa.enrolled": "factor.added",
    "mfa.factor_removed": "factor.removed",
    "mfa.reset": "factor.removed",
    "session.ended": "session.ended",
    "session.others_ended": "session.ended",
    "saml.logout": "session.ended",
    "token.revoked": "token.revoked",
    "user.tokens_revoked": "token.revoked",
    "api_key.revoked": "api_key.revoked",
    "application.created": "application.created",
    "application.registered": "application.created",
    "application.updated": "application.updated",
    "application.secret_regenerated": "application.updated",
    "application.deleted": "application.deleted",
    # OpenID Connect and SAML 2.0 providers are both "sso" records.
    "sso.created": "sso_provider.created",
    "sso.updated": "sso_provider.updated",
    "sso.deleted": "sso_provider.deleted",
}


def event_type(recorded: Recorded) -> str | None:
    """The webhook event type of an audit record; None when it is none. An admin's change of a user that
    disables or enables the account is ``user.disabled`` or ``user.enabled``."""
    if recorded.event == "user.updated":
        before, after = recorded.details.get("before") or {}, recorded.details.get("after") or {}
        if before.get("disabled") is False and after.get("disabled") is True:
            return "user.disabled"
        if before.get("disabled") is True and after.get("disabled") is False:
            return "user.enabled"
    return FROM_AUDIT.get(recorded.event)


def subject(recorded: Recorded) -> str | None:
    """What the event is about (``user:12``, ``application:3``): its record's target, else the user who acted
    (a sign-in's record names the user as its actor). Deliveries of one subject arrive in order."""
    if recorded.target:
        return recorded.target
    return recorded.actor if recorded.actor.startswith("user:") else None


def body(event: str, recorded: Recorded) -> dict[str, Any]:
    """The event as delivered: Standard Webhooks' ``type``, ``timestamp`` and ``data``."""
    moment = datetime.fromtimestamp(clock.time(), tz=UTC)
    return {
        "type": event,
        "timestamp": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "data": {
            "domain": str(recorded.domain_id),
            "subject": subject(recorded),
            "actor": recorded.actor,
            "audit_event": recorded.event,
            "details": recorded.details,
        },
    }


def subscribers(domain_id: int, event: str) -> list[str]:
    """The ids of the domain's enabled endpoints subscribed to ``event``; no read when the request's domain (read
    with it) says that none is."""
    if not _may_take(domain_id, event):
        return []
    # Not flushed first: the caller's change is flushed when it commits, with any conflict it has.
    with db.session.no_autoflush:
        rows = db.session.execute(
            select(WebhookEndpoint.id, WebhookEndpoint.events).where(
                WebhookEndpoint.domain_id == domain_id, WebhookEndpoint.enabled.is_(True)
            )
        ).all()
    return [endpoint_id for endpoint_id, events in rows if event in events.split()]


def _may_take(domain_id: int, event: str) -> bool:
    """False when an enabled endpoint of the domain cannot take ``event``, as its row (``Domain.webhook_events``)
    says: the request's domain, when it is the record's and its row is loaded. Else True (the endpoints are read).

    The row was read in this request, after any change of the endpoints committed before the request began
    (``note_types`` writes it in the change's transaction, under the row's lock): so a subscription takes effect
    at the next request of every instance, and nothing is cached between requests."""
    noted = state_if_in_request()
    domain = noted.domain if noted is not None else None
    if domain is None or domain.id != domain_id:
        return True
    loaded = inspect(domain).dict
    if "webhook_events" not in loaded:  # expired by a commit of the request: not read again for this
        return True
    return event in (loaded["webhook_events"] or "").split()


def note_types(domain_id: int) -> None:
    """Write on the domain's row the types its enabled endpoints take, in the transaction of a change of them.

    The row is locked first, before the change is flushed (PostgreSQL's FOR NO KEY UPDATE, which rows naming the
    domain do not wait for; SQLite writes one transaction at a time), so that two changes of a domain's endpoints
    at once each count the other's: the second reads the endpoints once the first committed."""
    with db.session.no_autoflush:
        db.session.execute(select(Domain.id).where(Domain.id == domain_id).with_for_update(key_share=True))
    db.session.flush()
    found = db.session.scalars(
        select(WebhookEndpoint.events).where(WebhookEndpoint.domain_id == domain_id, WebhookEndpoint.enabled.is_(True))
    )
    types = " ".join(sorted({event for events in found for event in events.split()})) or None
    db.session.execute(update(Domain).where(Domain.id == domain_id).values(webhook_events=types))


def queue_deliveries(recorded: Recorded) -> None:
    """Queue, in the record's transaction, the delivery of its event to each endpoint subscribed to it."""
    event = event_type(recorded)
    if event is None or recorded.domain_id is None:
        return
    endpoints = subscribers(recorded.domain_id, event)
    if not endpoints:
        return
    text = json.dumps(body(event, recorded), separators=(",", ":"))
    # One id per event (webhook-id), the same on every try: a receiver drops a second copy by it.
    message_id = "msg_" + secrets.token_urlsafe(18)
    about = subject(recorded) or ""
    for endpoint_id in endpoints:
        payload = {"endpoint": endpoint_id, "id": message_id, "type": event, "body": text}
        outbox.queue(
            KIND, json.dumps(payload), domain_id=recorded.domain_id, ordering_key=f"{endpoint_id}:{about}"[:120]
        )
