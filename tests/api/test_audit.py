"""Audit records: stored with the change they describe, published on Redis after commit, never secret."""

import json

from sqlalchemy import select

from authsvc.core import audit, store
from authsvc.core.database import db
from authsvc.core.models import AuditRecord, Domain


def test_a_record_is_stored_and_published_after_commit(app, world):
    with app.app_context():
        pubsub = store.client().pubsub()
        pubsub.subscribe(audit.CHANNEL)
        pubsub.get_message(timeout=1)  # the subscription confirmation
        audit.record("domain.created", actor="cli", target="domain:1", details={"name": "Acme", "password": "x"})
        message = pubsub.get_message(timeout=2)
        pubsub.close()
    published = json.loads(message["data"])
    assert published["event"] == "domain.created"
    assert published["details"] == {"name": "Acme", "password": "[redacted]"}
    [stored] = world.query(select(AuditRecord))
    assert (stored.event, stored.actor, stored.target) == ("domain.created", "cli", "domain:1")
    assert stored.details["password"] == "[redacted]"


def test_a_record_in_a_rolled_back_transaction_is_neither_stored_nor_published(app, world):
    with app.app_context():
        pubsub = store.client().pubsub()
        pubsub.subscribe(audit.CHANNEL)
        pubsub.get_message(timeout=1)
        db.session.add(Domain(name="x", host="x.example"))
        audit.record("domain.created", actor="cli", commit=False)
        db.session.flush()
        db.session.rollback()
        assert pubsub.get_message(timeout=0.5) is None
        pubsub.close()
    assert world.query(select(AuditRecord)) == []


def test_secrets_are_scrubbed_at_any_depth():
    scrubbed = audit.scrub({"before": {"client_secret": "s", "name": "a"}, "list": [{"token": "t"}]})
    assert scrubbed == {"before": {"client_secret": "[redacted]", "name": "a"}, "list": [{"token": "[redacted]"}]}
