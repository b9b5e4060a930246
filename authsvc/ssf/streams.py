"""Stream management (SSF 1.0 8.1): a receiver creates, reads, updates, replaces and deletes its stream,
reads and sets its status, adds and removes subjects, and asks for a verification event.

One stream per receiving application (a second is a 409, as 8.1.1.1 allows). Every operation
takes the body as received (a dict, or anything else: refused) and raises ``Refused`` for what it
will not do; the caller commits. Changes are audit records (``ssf.stream_created``, ...).
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import delete, select

from authsvc.core import audit, clock, validation
from authsvc.core.actors import of_client
from authsvc.core.database import db
from authsvc.core.models import User
from authsvc.core.settings import settings
from authsvc.ssf import events, sets, waiting
from authsvc.ssf.models import DISABLED, ENABLED, METHODS, POLL, PUSH, STATUSES, SsfStream, SsfSubject
from authsvc.ssf.receivers import Receiver, Refused, invalid

# SSF 1.0 8.1.4.2: seconds between two verification requests of a stream.
MIN_VERIFICATION_INTERVAL = 5
MAX_STATE = 500
MAX_HEADER = 2000
MAX_EVENTS = 50
# A push Authorization header's value: visible ASCII, spaces inside (RFC 9110 5.5 field-value, without obs-text),
# so that it is sent as given (no control character, no byte another encoding would change).
_HEADER_VALUE = re.compile(r"[\x21-\x7e][\x20-\x7e]*")


def _audit(receiver: Receiver, event: str, stream: SsfStream, details: dict[str, Any] | None = None) -> None:
    audit.record(
        event,
        domain_id=receiver.domain.id,
        actor=of_client(receiver.client_id),
        target=f"ssf_stream:{stream.id}",
        details=details or {},
        commit=False,
    )


def as_json(stream: SsfStream, poll_url: str) -> dict[str, Any]:
    """SSF 1.0 8.1.1's stream configuration; never the push authorization header."""
    requested = stream.requested
    found: dict[str, Any] = {
        "stream_id": stream.id,
        "iss": stream.issuer,
        "aud": stream.audience,
        "events_supported": list(events.SUPPORTED),
        "events_requested": requested,
        "events_delivered": [event for event in requested if event in events.SUPPORTED],
        "delivery": stream.delivery(poll_url),
        "min_verification_interval": MIN_VERIFICATION_INTERVAL,
    }
    if stream.description:
        found["description"] = stream.description
    return found


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object.")
    return body


def _stream_id(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise invalid("stream_id is required.")
    return value


def find(receiver: Receiver, stream_id: Any) -> SsfStream:
    """The receiver's stream ``stream_id``; 404 for any other (another receiver's alike)."""
    wanted = _stream_id(stream_id)
    # A stream's id is 32 hex digits (SsfStream.create): anything else names none, and is never a query.
    stream = db.session.get(SsfStream, wanted) if len(wanted) == 32 and wanted.isalnum() and wanted.isascii() else None
    if stream is None or stream.application_id != receiver.application_id:
        raise Refused(404, "not_found", "There is no such stream of this receiver.")
    return stream


def mine(receiver: Receiver) -> list[SsfStream]:
    found = db.session.scalars(select(SsfStream).where(SsfStream.application_id == receiver.application_id))
    return list(found)


def _events(value: Any) -> str:
    if (
        not isinstance(value, list)
        or len(value) > MAX_EVENTS
        or not all(isinstance(event, str) and 0 < len(event) <= 300 for event in value)
    ):
        raise invalid(f"events_requested must be a list of at most {MAX_EVENTS} event type URIs.")
    return " ".join(dict.fromkeys(value))


def _delivery(stream: SsfStream, value: Any) -> None:
    """Set the stream's delivery: push to the receiver's endpoint_url, or poll at ours."""
    if not isinstance(value, dict) or value.get("method") not in METHODS:
        raise invalid(f"delivery.method must be one of {', '.join(METHODS)}.")
    if value["method"] == POLL:
        stream.method, stream.endpoint_url, stream.authorization_header = POLL, None, None
        return
    url, header = value.get("endpoint_url"), value.get("authorization_header")
    if not isinstance(url, str):
        raise invalid("delivery.endpoint_url is required for push delivery.")
    try:
        private = settings().backchannel_allow_private_networks
        url = validation.client_url(url, "delivery.endpoint_url", allow_private=private)
    except validation.Invalid as exc:
        raise invalid(str(exc)) from None
    if header is not None and (not isinstance(header, str) or not header.strip() or len(header) > MAX_HEADER):
        raise invalid(f"delivery.authorization_header must be a string of at most {MAX_HEADER} characters.")
    if header is not None and not _HEADER_VALUE.fullmatch(header):
        raise invalid("delivery.authorization_header must be visible ASCII (spaces inside), on one line.")
    stream.method, stream.endpoint_url, stream.authorization_header = PUSH, url, header


def _description(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or len(value) > 500):
        raise invalid("description must be a string of at most 500 characters.")
    return value


def _configure(stream: SsfStream, body: dict[str, Any], replace: bool) -> None:
    if replace or "events_requested" in body:
        stream.events_requested = _events(body.get("events_requested", []))
    if replace or "delivery" in body:
        _delivery(stream, body.get("delivery", {"method": POLL}))
    if replace or "description" in body:
        stream.description = _description(body.get("description"))


def conflict() -> Refused:
    """A receiver's second stream (SSF 1.0 8.1.1.1 allows the refusal)."""
    return Refused(409, "conflict", "This receiver has a stream already: update it, or delete it first.")


def create(receiver: Receiver, issuer: str, body: Any) -> SsfStream:
    """SSF 1.0 8.1.1.1: the receiver's stream, polled unless ``delivery`` says push."""
    body = _object(body)
    if mine(receiver):
        raise conflict()
    stream = SsfStream.create(receiver.domain.id, receiver.application_id, issuer, receiver.client_id)
    _configure(stream, body, replace=True)
    db.session.add(stream)
    _audit(receiver, "ssf.stream_created", stream, {"method": stream.method, "events": stream.requested})
    return stream


def update(receiver: Receiver, body: Any, replace: bool) -> SsfStream:
    """SSF 1.0 8.1.1.3 (PATCH: what the body names) and 8.1.1.4 (PUT: all of it)."""
    body = _object(body)
    stream = find(receiver, body.get("stream_id"))
    polled = stream.method == POLL
    _configure(stream, body, replace)
    if polled and stream.method == PUSH and stream.status == ENABLED:
        waiting.release(stream)  # what was not polled yet is pushed now
    _audit(receiver, "ssf.stream_updated", stream, {"method": stream.method, "events": stream.requested})
    return stream


def remove(receiver: Receiver, stream_id: Any) -> None:
    """SSF 1.0 8.1.1.5: the stream, its subjects and what waits for it; its queued pushes are dropped."""
    stream = find(receiver, stream_id)
    waiting.drop(stream)
    db.session.execute(delete(SsfSubject).where(SsfSubject.stream_id == stream.id))
    _audit(receiver, "ssf.stream_deleted", stream)
    db.session.delete(stream)


def status(stream: SsfStream) -> dict[str, Any]:
    found = {"stream_id": stream.id, "status": stream.status}
    if stream.reason:
        found["reason"] = stream.reason
    return found


def set_status(receiver: Receiver, body: Any) -> SsfStream:
    """SSF 1.0 8.1.2.2: enabled (what waited for a push stream goes out now, in order), paused (held),
    disabled (nothing is kept: what waited is dropped)."""
    body = _object(body)
    stream = find(receiver, body.get("stream_id"))
    wanted, reason = body.get("status"), body.get("reason")
    if wanted not in STATUSES:
        raise invalid(f"status must be one of {', '.join(STATUSES)}.")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 500):
        raise invalid("reason must be a string of at most 500 characters.")
    before = stream.status
    stream.status, stream.reason = wanted, reason
    if wanted == DISABLED:
        waiting.drop(stream)
    elif wanted == ENABLED and before != ENABLED and stream.method == PUSH:
        waiting.release(stream)
    _audit(receiver, "ssf.stream_status", stream, {"before": before, "after": wanted})
    return stream


def _user(receiver: Receiver, stream: SsfStream, subject: Any) -> User | None:
    """The user an RFC 9493 subject names (``iss_sub``, ``email``, ``opaque``: the user's id), or None."""
    if not isinstance(subject, dict) or not isinstance(subject.get("format"), str):
        raise invalid("subject must be a subject identifier (RFC 9493) with a format.")
    kind = subject["format"]
    if kind == "email":
        email = subject.get("email")
        if not isinstance(email, str) or not email:
            raise invalid("An email subject needs its email.")
        return db.session.scalar(
            select(User).where(User.domain_id == receiver.domain.id, User.email == validation.account_name(email))
        )
    if kind == "iss_sub":
        iss, sub = subject.get("iss"), subject.get("sub")
        if not isinstance(iss, str) or not isinstance(sub, str):
            raise invalid("An iss_sub subject needs its iss and sub.")
        ident = sub if iss == stream.issuer else ""
    elif kind == "opaque":
        opaque = subject.get("id")
        if not isinstance(opaque, str):
            raise invalid("An opaque subject needs its id.")
        ident = opaque
    else:
        raise invalid("subject.format must be iss_sub, email or opaque.")
    user = db.session.get(User, int(ident)) if ident.isascii() and ident.isdigit() and len(ident) < 18 else None
    return user if user is not None and user.domain_id == receiver.domain.id else None


def change_subject(receiver: Receiver, body: Any, included: bool) -> None:
    """SSF 1.0 8.1.3: add the subject to the stream, or leave it out. The answer is the same whether
    the subject is a user or not: a receiver learns nothing of who has an account."""
    body = _object(body)
    stream = find(receiver, body.get("stream_id"))
    if "verified" in body and not isinstance(body["verified"], bool):
        raise invalid("verified must be true or false.")
    user = _user(receiver, stream, body.get("subject"))
    if user is None:
        return
    row = db.session.scalar(select(SsfSubject).where(SsfSubject.stream_id == stream.id, SsfSubject.user_id == user.id))
    if row is None:
        row = SsfSubject(stream_id=stream.id, application_id=stream.application_id, user_id=user.id)
        db.session.add(row)
    row.included = included
    event = "ssf.subject_added" if included else "ssf.subject_removed"
    _audit(receiver, event, stream, {"user": f"user:{user.id}"})


def verify(receiver: Receiver, body: Any) -> None:
    """SSF 1.0 8.1.4.2: a verification SET, carrying the receiver's ``state``, queued as any other."""
    body = _object(body)
    stream = find(receiver, body.get("stream_id"))
    state = body.get("state")
    if state is not None and (not isinstance(state, str) or len(state) > MAX_STATE):
        raise invalid(f"state must be a string of at most {MAX_STATE} characters.")
    now = clock.now()
    if stream.verified_at is not None and now - stream.verified_at < MIN_VERIFICATION_INTERVAL:
        raise Refused(429, "too_many_requests", f"At most one verification each {MIN_VERIFICATION_INTERVAL} seconds.")
    stream.verified_at = now
    members = {"state": state} if state is not None else {}
    sub_id = {"format": "opaque", "id": stream.id}
    claims = sets.claims(stream, sets.new_txn(), events.VERIFICATION, members, sub_id)
    sets.hand_over(stream, claims, "verification")
