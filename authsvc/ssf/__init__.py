"""The Shared Signals Framework (SSF 1.0) transmitter of each domain (docs/events.md, "Shared Signals").

A receiver is an application allowed the reserved ``ssf`` scope: with its client
credentials token it manages its stream (authsvc.ssf.streams, served by
authsvc.ssf.views) and, for a poll stream, polls it (RFC 8936, authsvc.ssf.waiting).
Changes become CAEP and RISC events (authsvc.ssf.events) and Security Event
Tokens (RFC 8417, authsvc.ssf.sets) in the transaction of their audit record;
push streams' SETs go through the webhooks' outbox (authsvc.outbox) and are
POSTed as RFC 8935 says (authsvc.ssf.push), signed with the domain's keys.
"""

from __future__ import annotations

from flask import Flask

from authsvc import webhooks
from authsvc.core import audit
from authsvc.outbox import sender
from authsvc.ssf import events, push, sets


def init_app(app: Flask) -> None:
    """Queue SETs with the records of every app, and push them with this app's senders, retried as webhooks."""
    from authsvc.core.settings import settings

    audit.on_record(sets.queue_sets, events.AUDIT_EVENTS)
    sender.handlers(app).register(sets.KIND, push.deliver, webhooks.retry, workers=settings(app).webhook_workers)
