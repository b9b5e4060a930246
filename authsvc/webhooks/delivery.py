"""Delivering one event to one endpoint: the outbox's handler of webhooks (authsvc.outbox.sender).

Signed when sent, not when queued: ``webhook-timestamp`` is the time of the
try (a receiver refuses one older than a few minutes), and a rotated secret
signs from the next try on. The POST goes through authsvc.core.outbound:
https to a public address unless AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS
(the one setting of every outbound delivery), no redirects, and the whole
exchange within AUTHSVC_OUTBOUND_DEADLINE, so that a receiver that hangs or
trickles its answer holds one of the senders' threads that long and no more.
A 2xx answer delivers; anything else, or no answer, is tried again later.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from standardwebhooks import Webhook

from authsvc.core import clock
from authsvc.core.database import db
from authsvc.core.settings import settings
from authsvc.outbox.models import OutboxItem
from authsvc.outbox.sender import GiveUp
from authsvc.webhooks.models import WebhookEndpoint

ANSWER_READ_BYTES = 64 * 1024  # of a receiver's answer: enough for an error body (RFC 8935 2.4's)
USER_AGENT = "authsvc-webhooks"


class Undelivered(Exception):  # noqa: N818 - what happened, as the outbox records it
    """The receiver did not accept the delivery (no answer, or an answer that says to try again)."""


def signature(secrets: list[str], message_id: str, at: int, body: str) -> str:
    """The ``webhook-signature`` header: a ``v1,`` HMAC-SHA256 signature by each secret, space-separated."""
    moment = datetime.fromtimestamp(at, tz=UTC)
    return " ".join(Webhook(secret).sign(message_id, moment, body) for secret in secrets)


def post(url: str, body: bytes, headers: dict[str, str], keep_body: bool) -> Any:
    """POST ``body`` to a receiver through the outbound rules (deadline, answer size, private networks); its
    answer (``requests.Response``), or Undelivered (no answer: tried again) or GiveUp (refused by the rules).
    Every delivery of the outbox to a receiver goes through here: webhooks and Shared Signals' push."""
    from authsvc.core import outbound  # imports requests: only a process that delivers needs it

    config = settings()
    with outbound.guard(
        None,
        allow_private=config.backchannel_allow_private_networks,
        seconds=config.outbound_deadline,
        max_bytes=ANSWER_READ_BYTES,
        keep_body=keep_body,
    ) as http:
        try:
            return http.post(url, data=body, headers=headers)
        except Exception as exc:  # noqa: BLE001 - any failure of the peer is recorded, by its class (no URL)
            if outbound.refused(exc):
                raise GiveUp("refused by the outbound rules (AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS)") from None
            raise Undelivered(exc.__class__.__name__) from None


def deliver(item: OutboxItem) -> None:
    """POST the item's event to its endpoint; raises Undelivered (tried again) or GiveUp (refused by the rules)."""
    message = json.loads(item.read())
    endpoint = db.session.get(WebhookEndpoint, message["endpoint"])
    if endpoint is None or not endpoint.enabled:
        return  # deleted or disabled since: there is nobody to deliver to
    at = clock.now()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": message["id"],
        "webhook-timestamp": str(at),
        "webhook-signature": signature(endpoint.signing_secrets(), message["id"], at, message["body"]),
    }
    response = post(endpoint.url, message["body"].encode("utf-8"), headers, keep_body=False)
    if not 200 <= response.status_code < 300:
        raise Undelivered(f"HTTP {response.status_code}")
