"""Push delivery (RFC 8935): the outbox's handler of SETs (authsvc.outbox.sender).

Signed when sent, with the domain's current key. The POST goes through
authsvc.core.outbound, as a webhook's does: https to a public address unless
AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS, no redirects, the whole exchange
within AUTHSVC_OUTBOUND_DEADLINE. A 2xx answer (RFC 8935 2.2: 202) delivers;
a 400 is the receiver refusing this SET for good (RFC 8935 2.3): it is given
up and kept as a dead letter; anything else, or no answer, is tried again.
A SET whose stream was paused, or turned to polling, since it was queued
waits with the stream's others (authsvc.ssf.waiting); one whose stream is
gone or disabled is dropped.
"""

from __future__ import annotations

import json

from authsvc.core.database import db
from authsvc.core.models import Domain
from authsvc.outbox.models import OutboxItem
from authsvc.outbox.sender import GiveUp
from authsvc.ssf import sets, waiting
from authsvc.ssf.models import DISABLED, PAUSED, PUSH, SsfStream
from authsvc.webhooks.delivery import Undelivered, post

USER_AGENT = "authsvc-ssf"
MEDIA_TYPE = "application/secevent+jwt"


def _refusal(body: bytes) -> str:
    """RFC 8935 2.4's ``err`` and ``description`` of a 400, as the dead letter records them (no secret)."""
    try:
        answer = json.loads(body)
    except ValueError:
        return "HTTP 400"
    if not isinstance(answer, dict):
        return "HTTP 400"
    return f"HTTP 400 {str(answer.get('err'))[:60]}: {str(answer.get('description'))[:200]}"


def deliver(item: OutboxItem) -> None:
    """POST the item's SET to its stream's endpoint; raises Undelivered (tried again) or GiveUp (kept)."""
    message = json.loads(item.read())
    stream = db.session.get(SsfStream, message["stream"])
    if stream is None or stream.status == DISABLED:
        return  # deleted or disabled since: nobody to deliver to
    if stream.status == PAUSED or stream.method != PUSH or not stream.endpoint_url:
        # Paused, or turned to polling, since it was queued: it waits with the stream's others (once,
        # should this item be handled again after a sender died before marking it done).
        if not waiting.holds(stream, message["claims"]["jti"]):
            sets.hand_over(stream, message["claims"], "")
            db.session.commit()
        return
    domain = db.session.get(Domain, stream.domain_id)
    if domain is None:
        return
    headers = {"Content-Type": MEDIA_TYPE, "Accept": "application/json", "User-Agent": USER_AGENT}
    authorization = stream.authorization_header
    if authorization:
        headers["Authorization"] = authorization
    token = sets.sign(domain, message["claims"])
    response = post(stream.endpoint_url, token.encode("ascii"), headers, keep_body=True)
    if response.status_code == 400:
        raise GiveUp(_refusal(response.content))
    if not 200 <= response.status_code < 300:
        raise Undelivered(f"HTTP {response.status_code}")
