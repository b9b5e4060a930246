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


def test_a_record_inserted_in_the_transaction_is_stored_and_published_as_the_orm_record_is(app, world):
    # The token endpoint's form (one Core INSERT): the same row, the same message, after the same commit.
    with app.app_context():
        pubsub = store.client().pubsub()
        pubsub.subscribe(audit.CHANNEL)
        pubsub.get_message(timeout=1)
        ident = audit.record_in_transaction(
            audit.record_values(
                "token.issued", domain_id=7, actor="client:abc", target="token:1", details={"refresh_token": "r"}
            )
        )
        assert pubsub.get_message(timeout=0.5) is None  # not before the commit
        db.session.commit()
        message = pubsub.get_message(timeout=2)
        pubsub.close()
    [stored] = world.query(select(AuditRecord))
    assert stored.id == ident
    assert stored.details == {"refresh_token": "[redacted]"}
    assert json.loads(message["data"]) == stored.as_json()


def test_a_record_inserted_in_a_rolled_back_transaction_is_neither_stored_nor_published(app, world):
    with app.app_context():
        pubsub = store.client().pubsub()
        pubsub.subscribe(audit.CHANNEL)
        pubsub.get_message(timeout=1)
        audit.record_in_transaction(audit.record_values("token.issued", domain_id=None, actor="cli"))
        db.session.rollback()
        assert pubsub.get_message(timeout=0.5) is None
        pubsub.close()
    assert world.query(select(AuditRecord)) == []


def test_events_committed_together_are_published_in_commit_order(app, world):
    # The publisher sends what waits in one pipeline (authsvc.core.audit.LINGER): order and content as committed.
    with app.app_context():
        pubsub = store.client().pubsub()
        pubsub.subscribe(audit.CHANNEL)
        pubsub.get_message(timeout=1)
        for n in range(3):
            audit.record("domain.updated", actor="cli", target=f"domain:{n}")
        messages = [pubsub.get_message(timeout=2) for _ in range(3)]
        pubsub.close()
    assert [json.loads(m["data"])["target"] for m in messages] == ["domain:0", "domain:1", "domain:2"]
