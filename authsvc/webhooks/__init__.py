"""Signed webhooks (docs/events.md): a domain's admins subscribe URLs to event types, and each event of those
types is POSTed to them as the Standard Webhooks specification says (webhook-id, webhook-timestamp,
webhook-signature: HMAC-SHA256).

The events are the audit records of the changes they report (authsvc.core.audit): one rule
(``authsvc.webhooks.events``) turns a record into an event, and queues one delivery per subscribed URL in
the record's own transaction, in the outbox (authsvc.outbox). The outbox's senders deliver them
(``authsvc.webhooks.delivery``): at least once, in order per URL and subject, tried again with a growing
wait and dead-lettered (kept, to be replayed) after AUTHSVC_WEBHOOK_GIVE_UP.
"""

from __future__ import annotations

from flask import Flask

from authsvc.core import audit
from authsvc.outbox import claims, sender
from authsvc.webhooks import delivery, events
from config.settings import Settings


def retry(config: Settings) -> claims.Retry:
    """A delivery waits at most AUTHSVC_WEBHOOK_LONGEST_WAIT between tries, and is kept when given up."""
    return claims.Retry(
        backoff=config.webhook_backoff,
        give_up=config.webhook_give_up,
        longest=config.webhook_longest_wait,
        keep_given_up=True,
    )


def init_app(app: Flask) -> None:
    """Queue deliveries with the records of every app, and deliver them with this app's senders."""
    from authsvc.core.settings import settings

    audit.on_record(events.queue_deliveries, events.FROM_AUDIT)
    sender.handlers(app).register(events.KIND, delivery.deliver, retry, workers=settings(app).webhook_workers)
