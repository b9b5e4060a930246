"""Security Event Tokens (RFC 8417) as SSF 1.0 profiles them, and queueing them for their streams.

``queue_sets`` listens to the audit records of the events it can make as they
join their transaction (authsvc.core.audit.on_record), as the webhooks do: each SSF event the record is
(authsvc.ssf.events) becomes a SET's claims for every stream of the domain
that asked for the event and has the user among its subjects. An enabled push
stream's SET is an outbox item (authsvc.outbox: delivered at least once, in
order per stream and user, retried, dead-lettered); any other's waits in
``ssf_waiting`` for a poll (RFC 8936) or for its stream to be enabled again.
Claims are stored; the SET is signed with the domain's current key when it is
sent or polled (authsvc.oauth.keys), so that a rotated key never strands one.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from sqlalchemy import select

from authsvc import outbox
from authsvc.core import clock, security
from authsvc.core.audit import Recorded
from authsvc.core.database import db
from authsvc.core.models import Domain
from authsvc.oauth import keys
from authsvc.ssf import events
from authsvc.ssf.models import DISABLED, ENABLED, PUSH, SsfStream, SsfSubject, SsfWaiting

KIND = "ssf"
TOKEN_TYPE = "secevent+jwt"  # RFC 8417 2.3: the header's typ


def claims(stream: SsfStream, txn: str, event: str, members: dict[str, Any], sub_id: dict[str, str]) -> dict[str, Any]:
    """A SET's claims for ``stream``: SSF 1.0 4.1's ``sub_id`` at the top, one event, and ``txn`` shared by
    the SETs of one change (RFC 8417 2.2)."""
    return {
        "iss": stream.issuer,
        "jti": secrets.token_hex(16),
        "iat": clock.now(),
        "aud": stream.audience,
        "txn": txn,
        "sub_id": sub_id,
        "events": {event: members},
    }


def new_txn() -> str:
    """RFC 8417 2.2's ``txn``: one per change, shared by the SETs it makes."""
    return secrets.token_hex(16)


def user_subject(stream: SsfStream, user_id: int) -> dict[str, str]:
    """RFC 9493's ``iss_sub``: the ``sub`` of the user's ID tokens at the stream's issuer."""
    return {"format": "iss_sub", "iss": stream.issuer, "sub": str(user_id)}


def sign(domain: Domain, set_claims: dict[str, Any]) -> str:
    """The SET, signed with the domain's current key (published at its jwks_uri)."""
    return keys.sign(domain, set_claims, typ=TOKEN_TYPE)


def hand_over(stream: SsfStream, set_claims: dict[str, Any], ordering: str) -> None:
    """Queue a SET in the caller's transaction: to the outbox for an enabled push stream, else to wait."""
    if stream.method == PUSH and stream.status == ENABLED:
        payload = json.dumps({"stream": stream.id, "claims": set_claims})
        outbox.queue(KIND, payload, domain_id=stream.domain_id, ordering_key=f"ssf:{stream.id}:{ordering}"[:120])
        return
    db.session.add(
        SsfWaiting(
            stream_id=stream.id,
            application_id=stream.application_id,
            jti=set_claims["jti"],
            claims_encrypted=security.encrypt(json.dumps(set_claims)),
            created_at=clock.now_ms(),
        )
    )


def _streams(domain_id: int, user_ids: set[int]) -> list[tuple[SsfStream, set[int]]]:
    """The domain's streams not disabled, each with those of ``user_ids`` it leaves out."""
    found = list(
        db.session.scalars(select(SsfStream).where(SsfStream.domain_id == domain_id, SsfStream.status != DISABLED))
    )
    if not found:
        return []
    rows = db.session.execute(
        select(SsfSubject.stream_id, SsfSubject.user_id).where(
            SsfSubject.stream_id.in_([stream.id for stream in found]),
            SsfSubject.user_id.in_(user_ids),
            SsfSubject.included.is_(False),
        )
    ).all()
    return [(stream, {user for stream_id, user in rows if stream_id == stream.id}) for stream in found]


def queue_sets(recorded: Recorded) -> None:
    """Queue, in the record's transaction, a SET of each of its events for each stream that takes it."""
    found = events.signals(recorded)
    if not found or recorded.domain_id is None:
        return
    # Not flushed first: the caller's change is flushed when it commits, with any conflict it has.
    with db.session.no_autoflush:
        streams = _streams(recorded.domain_id, {signal.user_id for signal in found})
        txn = new_txn()
        for stream, left_out in streams:
            wanted = set(stream.requested)
            for signal in found:
                if signal.event in wanted and signal.user_id not in left_out:
                    sub_id = user_subject(stream, signal.user_id)
                    hand_over(stream, claims(stream, txn, signal.event, signal.members, sub_id), str(signal.user_id))
