"""Audit events: stored in SQL (``GET /api/engine/v2/audit``) and published on Redis.

Other services subscribe to the ``authsvc/events`` channel. Publishing is best
effort: an event is never lost from SQL because Redis is down.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import g, has_request_context, request
from sqlalchemy import event
from sqlalchemy.orm import Session

from authsvc import store
from authsvc.core.models import AuditRecord
from authsvc.database import db

log = logging.getLogger(__name__)

CHANNEL = "authsvc/events"

# Keys whose values never go into an audit record, whatever the caller passes.
SECRET_KEYS = {"password", "password_hash", "client_secret", "client_secret_digest", "secret", "secret_digest",
               "token", "access_token", "refresh_token", "code", "key", "client_secret_encrypted"}  # fmt: skip


def scrub(data: Any) -> Any:
    """``data`` without secret values (recursively), for records and logs."""
    if isinstance(data, dict):
        return {k: ("[redacted]" if k in SECRET_KEYS else scrub(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [scrub(v) for v in data]
    return data


def actor_of(credential: Any = None) -> str:
    """A short name for who acts: the request's credential, else its session user, else anonymous."""
    if credential is not None:
        if getattr(credential, "api_key_id", None):
            return f"api_key:{credential.api_key_id}"
        return f"user:{credential.user.id}"
    user = g.get("authsvc_session_user") if has_request_context() else None
    return f"user:{user.id}" if user is not None else "anonymous"


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
    if commit:
        db.session.commit()
    return entry


_PENDING = "authsvc_audit_pending"


@event.listens_for(Session, "after_flush")
def _collect(session: Session, flush_context: Any) -> None:
    # Serialise now: after the commit the session may not load attributes.
    for obj in session.new:
        if isinstance(obj, AuditRecord):
            session.info.setdefault(_PENDING, []).append(json.dumps(obj.as_json()))


@event.listens_for(Session, "after_commit")
def _publish(session: Session) -> None:
    for payload in session.info.pop(_PENDING, []):
        try:
            store.client().publish(CHANNEL, payload)
        except Exception:  # noqa: BLE001 - a broken channel must not undo the stored record
            log.warning("could not publish an audit event on %s", CHANNEL)


@event.listens_for(Session, "after_rollback")
def _forget(session: Session) -> None:
    session.info.pop(_PENDING, None)
