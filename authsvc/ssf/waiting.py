"""The SETs that wait in SQL: polled (RFC 8936) until the receiver acknowledges them, or held for a paused
push stream until it is enabled again (then handed to the outbox, in the order they were made)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from sqlalchemy import delete, select

from authsvc.core import security
from authsvc.core.database import db
from authsvc.core.models import Domain
from authsvc.ssf import sets
from authsvc.ssf.models import ENABLED, SsfStream, SsfWaiting
from authsvc.ssf.receivers import invalid

log = logging.getLogger(__name__)

# RFC 8936 2.4: the most SETs one poll answers (a receiver asks for fewer with maxEvents).
MOST = 100
MAX_ACKS = 1000
# Seconds between two looks for a SET while a poll waits for one.
WAIT_STEP = 0.1


def holds(stream: SsfStream, jti: str) -> bool:
    """Whether the SET ``jti`` waits for ``stream`` already."""
    found = db.session.scalar(select(SsfWaiting.id).where(SsfWaiting.stream_id == stream.id, SsfWaiting.jti == jti))
    return found is not None


def drop(stream: SsfStream) -> None:
    """Forget what waits for ``stream`` (it was disabled: nothing is kept)."""
    db.session.execute(delete(SsfWaiting).where(SsfWaiting.stream_id == stream.id))


def release(stream: SsfStream) -> None:
    """Hand what waited for the (now enabled) push stream to the outbox, oldest first."""
    rows = list(db.session.scalars(select(SsfWaiting).where(SsfWaiting.stream_id == stream.id).order_by(SsfWaiting.id)))
    for row in rows:
        claims = json.loads(security.decrypt(row.claims_encrypted))
        subject = claims.get("sub_id", {})
        sets.hand_over(stream, claims, str(subject.get("sub") or subject.get("id") or ""))
        db.session.delete(row)


def _jtis(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_ACKS or not all(isinstance(j, str) for j in value):
        raise invalid(f"{what} must be a list of at most {MAX_ACKS} jti strings.")
    return value


def _request(body: Any) -> tuple[list[str], int, dict[str, Any], bool]:
    """RFC 8936 2.4's request: what is acknowledged (ack, setErrs) and how many SETs to answer."""
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object.")
    acks = _jtis(body.get("ack", []), "ack")
    errors = body.get("setErrs", {})
    if not isinstance(errors, dict) or len(errors) > MAX_ACKS:
        raise invalid("setErrs must be an object of jti to {err, description}.")
    most = body.get("maxEvents", MOST)
    if isinstance(most, bool) or not isinstance(most, int) or most < 0:
        raise invalid("maxEvents must be a non-negative integer.")
    immediately = body.get("returnImmediately", True)
    if not isinstance(immediately, bool):
        raise invalid("returnImmediately must be true or false.")
    return acks + [str(jti) for jti in errors], min(most, MOST), errors, immediately


def _oldest(stream: SsfStream, most: int, wait: float) -> list[SsfWaiting]:
    """Up to ``most`` + 1 waiting SETs, oldest first; with none, looked for again until ``wait`` seconds pass."""
    deadline = time.monotonic() + wait
    while True:
        query = select(SsfWaiting).where(SsfWaiting.stream_id == stream.id).order_by(SsfWaiting.id).limit(most + 1)
        rows = list(db.session.scalars(query))
        if rows or time.monotonic() >= deadline:
            return rows
        db.session.commit()  # ends the read: the next one sees what was committed since
        time.sleep(min(WAIT_STEP, max(deadline - time.monotonic(), 0)))


def poll(stream: SsfStream, body: Any, wait: float = 0) -> dict[str, Any]:
    """RFC 8936 2.4: forget the acknowledged SETs (and those the receiver refused, setErrs: logged),
    then answer up to ``maxEvents`` of those waiting, oldest first, signed now; ``moreAvailable`` if
    more wait. With none waiting and ``returnImmediately`` false, the answer waits up to ``wait``
    seconds (AUTHSVC_SSF_POLL_WAIT) for one. A paused stream answers none: they wait for it."""
    done, most, errors, immediately = _request(body)
    for jti, error in errors.items():
        log.warning("SSF stream %s: the receiver refused SET %s: %s", stream.id, str(jti)[:64], str(error)[:300])
    if done:
        db.session.execute(delete(SsfWaiting).where(SsfWaiting.stream_id == stream.id, SsfWaiting.jti.in_(done)))
        db.session.commit()  # acknowledged, whatever the answer does next
    if stream.status != ENABLED or most == 0:
        return {"sets": {}, "moreAvailable": False}
    rows = _oldest(stream, most, 0 if immediately else wait)
    domain = db.session.get(Domain, stream.domain_id)
    if domain is None:
        return {"sets": {}, "moreAvailable": False}
    answered = {row.jti: sets.sign(domain, json.loads(security.decrypt(row.claims_encrypted))) for row in rows[:most]}
    return {"sets": answered, "moreAvailable": len(rows) > most}
