"""Audit events: stored in SQL (``GET /api/engine/v2/audit``) and published on Redis.

Other services subscribe to the ``authsvc/events`` channel. Publishing is best
effort and off the request path: committed events go to a bounded queue that
one thread per process publishes from, so a slow or hung Redis never holds a
request. An event is never lost from SQL because Redis is down; one that
cannot be published (queue full, Redis unreachable) is logged with its id.

What must follow a record reliably listens to it being added (``on_record``):
a listener joins the record's own transaction (authsvc.webhooks queues its
deliveries there), so that both are saved, or lost, together.
"""

from __future__ import annotations

import atexit
import json
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypedDict

from flask import has_request_context, request
from sqlalchemy import event, insert
from sqlalchemy.orm import Session

from authsvc.core import actors, store
from authsvc.core.background import BackgroundQueue
from authsvc.core.database import db, now
from authsvc.core.models import AuditRecord
from authsvc.core.request_state import state, state_if_in_request

log = logging.getLogger(__name__)

CHANNEL = "authsvc/events"
# Built once: a statement made per call costs its cache key each time.
_INSERT = insert(AuditRecord)

# Keys whose values never go into an audit record, whatever the caller passes.
SECRET_KEYS = {
    "password",
    "password_hash",
    "client_secret",
    "client_secret_digest",
    "secret",
    "secret_digest",
    "token",
    "access_token",
    "refresh_token",
    "code",
    "key",
    "client_secret_encrypted",
    # OpenID Connect: a nonce or session id in a log would let a reader replay or follow a sign-in.
    "nonce",
    "sid",
    "id_token",
    "id_token_hint",
    "logout_token",
    "private_key_encrypted",
}


@dataclass(frozen=True)
class Recorded:
    """A record as it joins its transaction, for the listeners of ``on_record``: its details scrubbed."""

    event: str
    domain_id: int | None
    actor: str
    target: str | None
    details: dict[str, Any]


# Each listener with the audit events it takes; and every event some listener takes.
_listeners: list[tuple[Callable[[Recorded], None], frozenset[str]]] = []
_heard: frozenset[str] = frozenset()


def on_record(listener: Callable[[Recorded], None], events: Collection[str]) -> None:
    """Call ``listener`` with every record of one of ``events`` added to a transaction (by ``record`` or
    ``record_in_transaction``), in that transaction; once however often it is registered. A record of an event
    no listener takes costs a set lookup: a token's record (every grant writes one) is none of them."""
    global _heard
    if all(registered != listener for registered, _ in _listeners):
        _listeners.append((listener, frozenset(events)))
        _heard = _heard | frozenset(events)


def _tell(event: str, domain_id: int | None, actor: str, target: str | None, details: dict[str, Any]) -> None:
    if event not in _heard:
        return
    recorded = Recorded(event, domain_id, actor, target, details)
    for listener, events in _listeners:
        if event in events:
            listener(recorded)


def scrub(data: Any) -> Any:
    """``data`` without secret values (recursively), for records and logs."""
    if isinstance(data, dict):
        return {k: ("[redacted]" if k in SECRET_KEYS else scrub(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [scrub(v) for v in data]
    return data


def acting_for(user_id: int | None) -> None:
    """Name the signed-in user the request acts for (the session's), for ``actor_of`` without a credential."""
    state().acting_user_id = user_id


def actor_of(credential: Any = None) -> str:
    """A short name for who acts: the request's credential, else its session user, else anonymous."""
    if credential is not None:
        if getattr(credential, "api_key_id", None):
            return actors.of_api_key(credential.api_key_id)
        return actors.of_user(credential.user.id)
    noted = state_if_in_request()
    user_id = noted.acting_user_id if noted is not None else None
    return actors.of_user(user_id) if user_id is not None else "anonymous"


def record(
    event: str,
    *,
    domain_id: int | None = None,
    actor: str | None = None,
    target: str | None = None,
    details: dict[str, Any] | None = None,
    commit: bool = True,
) -> AuditRecord:
    """Store an audit event; it is published once its transaction commits.

    With ``commit=False`` the record joins the caller's transaction, so that a
    change and its audit record are saved, or lost, together.
    """
    entry = AuditRecord(
        event=event,
        domain_id=domain_id,
        actor=actor or actor_of(),
        target=target,
        ip=request.remote_addr if has_request_context() else None,
        details=scrub(details or {}),
    )
    db.session.add(entry)
    _tell(event, domain_id, entry.actor, target, entry.details)
    if commit:
        db.session.commit()
    return entry


class AuditValues(TypedDict):
    """An audit record's columns as ``record_values`` makes them, for a statement of its caller's own
    (authsvc.tokens.rows) and for publishing the row it inserted (``AuditRecord.json_of``)."""

    at: int
    domain_id: int | None
    event: str
    actor: str
    target: str | None
    ip: str | None
    # The event's own facts (each event has its own), scrubbed of secrets.
    details: dict[str, Any]


def record_in_transaction(values: AuditValues) -> int:
    """``record(..., commit=False)`` as one Core INSERT on the session's connection; the record's id.

    ``values``: the record's columns, from ``record_values``. For the token
    endpoint, which saves a record with every token: the same row in the same
    transaction, published after the same commit, without the ORM's unit of
    work (a tenth of a token request's CPU, docs/performance.md).
    """
    result = db.session().connection().execute(_INSERT, values)
    ident = int(result.inserted_primary_key[0])  # type: ignore[index]  # an INSERT of one row has its key
    note_inserted(ident, values)
    _tell(values["event"], values["domain_id"], values["actor"], values["target"], values["details"])
    return ident


def record_values(
    event: str,
    *,
    domain_id: int | None,
    actor: str,
    target: str | None = None,
    details: dict[str, Any] | None = None,
) -> AuditValues:
    """A record's columns, for record_in_transaction or a statement of the caller's own."""
    return {
        "at": now(),
        "domain_id": domain_id,
        "event": event,
        "actor": actor,
        "target": target,
        "ip": request.remote_addr if has_request_context() else None,
        "details": scrub(details or {}),
    }


def note_inserted(ident: int, values: AuditValues) -> None:
    """Publish the record ``ident`` (``values``, inserted in the session's transaction) once that commits."""
    db.session().info.setdefault(_PENDING, []).append(json.dumps(AuditRecord.json_of(ident, **values)))


def note_committed(ident: int, values: AuditValues) -> None:
    """Publish the record ``ident`` (``values``), committed already by a statement in autocommit."""
    PUBLISHER.put((store.client(), json.dumps(AuditRecord.json_of(ident, **values))))


_PENDING = "authsvc_audit_pending"


@event.listens_for(Session, "after_flush")
def _collect(session: Session, flush_context: Any) -> None:
    # Serialise now: after the commit the session may not load attributes.
    for obj in session.new:
        if isinstance(obj, AuditRecord):
            session.info.setdefault(_PENDING, []).append(json.dumps(obj.as_json()))


def _dropped(payload: str, reason: str) -> None:
    try:
        what = json.loads(payload)
        name = f"{what.get('event')} (id {what.get('id')})"
    except ValueError:
        name = "an event"
    log.warning("audit event %s not published on %s: %s; it is stored in SQL", name, CHANNEL, reason)


def _publish_batch(items: list[tuple[Any, str]]) -> None:
    """The events in commit order, in one round trip (a pipeline) per Redis client (an app has one)."""
    batches: dict[int, tuple[Any, list[str]]] = {}
    for client, payload in items:
        batches.setdefault(id(client), (client, []))[1].append(payload)
    for client, payloads in batches.values():
        pipeline = client.pipeline(transaction=False)
        for payload in payloads:
            pipeline.publish(CHANNEL, payload)
        try:
            pipeline.execute()
        except Exception as exc:  # noqa: BLE001 - Redis unreachable, say: each event is logged, none lost from SQL
            for payload in payloads:
                _dropped(payload, f"{exc.__class__.__name__} (its batch of {len(payloads)} may be partly published)")


# Published from a thread of its own, in commit order; at most 1000 events wait, past that they are logged.
# The thread waits LINGER after an event for those that follow: a busy worker publishes a batch a wake-up
# (a token request's event cost it a quarter of a millisecond of CPU one at a time: docs/performance.md),
# of at most BATCH events. Subscribers may see an event twice (a batch retried): each carries its record's id.
LINGER = 0.05
BATCH = 100
PUBLISHER: BackgroundQueue[tuple[Any, str]] = BackgroundQueue(
    "authsvc-audit-publisher",
    handle_batch=_publish_batch,
    linger=LINGER,
    batch=BATCH,
    on_full=lambda item: _dropped(item[1], "the publishing queue is full"),
    on_error=lambda item, exc: _dropped(item[1], exc.__class__.__name__),
)
# At a clean exit (a worker restarted), what is queued still gets its chance.
atexit.register(PUBLISHER.flush)


@event.listens_for(Session, "after_commit")
def _publish(session: Session) -> None:
    payloads = session.info.pop(_PENDING, [])
    if payloads:
        client = store.client()
        for payload in payloads:
            PUBLISHER.put((client, payload))


@event.listens_for(Session, "after_rollback")
def _forget(session: Session) -> None:
    session.info.pop(_PENDING, None)
