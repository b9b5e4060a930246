"""The outbox: a message is queued with the change that causes it and sent by senders that may be down, many,
or unable to send, and it arrives exactly once. The SMTP server is aiosmtpd on loopback (tests/helpers/smtp.py);
the senders are the service's own, two of them on one database, as two instances would be.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord
from authsvc.outbox.sender import Sender
from tests.helpers import HttpsClient, headers
from tests.helpers.pages import csrf_token
from tests.helpers.smtp import deliver, mail_config, outbox_items


@pytest.fixture
def app(mail_app):
    """The suite's app, mailing the SMTP server."""
    return mail_app


def ask(client, email: str = "person@example.com"):
    page = client.get("/auth/password/forgot", headers=headers())
    return client.post(
        "/auth/password/forgot", data={"csrf_token": csrf_token(page), "email": email}, headers=headers()
    )


def queue_messages(app, count: int) -> None:
    """``count`` messages queued as a change would queue them (a domain of the test's world)."""
    from authsvc.core.database import db
    from authsvc.core.models import Domain
    from authsvc.mail import messages

    with app.app_context():
        domain = db.session.scalars(select(Domain)).one()
        with app.test_request_context():
            for n in range(count):
                messages.queue(domain, f"person{n}@example.com", "password_changed", "Changed", link="https://x/")
        db.session.commit()
        db.session.remove()


def test_a_reset_asked_while_smtp_is_down_answers_at_once_and_arrives_once_from_two_senders(
    make_app, smtp, setup, client
):
    smtp.stop()
    started = time.monotonic()
    assert ask(client).status_code == 200
    assert time.monotonic() - started < 2, "the answer does not wait for SMTP"
    # Two instances of the service on the same database, each with its sender thread.
    senders = [Sender(make_app(**mail_config(smtp)), name=name) for name in ("one", "two")]
    for sender in senders:
        sender.start()
    try:
        # Failed attempts (connection refused), each followed by a longer wait.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not _attempted(senders[0].app, 2):
            time.sleep(0.05)
        [question, message] = outbox_items(senders[0].app)
        assert question.done_at and message.attempts >= 2 and not message.done_at
        smtp.start()
        [received] = smtp.wait_for("person@example.com", timeout=10)
        time.sleep(0.5)  # time for a second copy to arrive, if one were sent
        assert len(smtp.to("person@example.com")) == 1
        assert received["Subject"] == "Reset your password"
        [_, sent] = outbox_items(senders[0].app)
        assert sent.done_at and sent.payload is None
    finally:
        for sender in senders:
            sender.stop()


def _attempted(app, times: int) -> bool:
    items = outbox_items(app, "mail")
    return bool(items) and items[0].attempts >= times


def test_two_senders_claiming_at_once_send_each_message_exactly_once(make_app, smtp, setup, app):
    queue_messages(app, 40)
    senders = [Sender(make_app(**mail_config(smtp)), name=name) for name in ("one", "two")]
    handled: list[int] = []
    go = threading.Barrier(len(senders))

    def run(sender: Sender) -> None:
        go.wait()
        for _ in range(10):
            handled.append(sender.run_once())

    threads = [threading.Thread(target=run, args=(sender,)) for sender in senders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    ids = [message["Message-ID"] for message in smtp.received]
    assert len(ids) == 40 and len(set(ids)) == 40, "every message once"
    assert sum(handled) == 40
    claimed_by = {item.claimed_by.split(":")[0] for item in outbox_items(app)}
    assert claimed_by <= {"one", "two"}


def test_a_message_survives_a_restart(make_app, smtp, setup, app, client):
    assert ask(client).status_code == 200
    # This instance stops before sending anything; the next one to start sends it.
    with app.app_context():
        from authsvc.core.database import db

        db.engine.dispose()
    later = make_app(**mail_config(smtp))
    deliver(later)
    assert len(smtp.to("person@example.com")) == 1


def test_an_instance_that_cannot_send_mail_claims_nothing(make_app, smtp, setup, app, client):
    assert ask(client).status_code == 200
    production = make_app(AUTHSVC_ENV="production")
    sender = Sender(production, name="production")
    assert "mail" not in sender.kinds and sender.run_once() == 0
    [question] = outbox_items(app)
    assert question.claimed_by is None and question.done_at is None
    production.test_client_class = HttpsClient
    browser = production.test_client()
    assert "not available" in browser.get("/auth/password/forgot", headers=headers()).get_data(as_text=True)
    assert "/auth/password/forgot" not in browser.get("/auth/login", headers=headers()).get_data(as_text=True)


def test_a_message_not_sent_in_time_is_given_up_and_audited(make_app, smtp, setup, world, clock):
    app = make_app(**mail_config(smtp, AUTHSVC_MAIL_GIVE_UP=60))
    queue_messages(app, 1)
    smtp.stop()
    sender = Sender(app, name="lonely")
    assert sender.run_once() == 1
    [item] = outbox_items(app)
    assert item.attempts == 1 and not item.given_up_at and "Connection" in item.last_error
    clock.advance(61)
    assert sender.run_once() == 1
    [item] = outbox_items(app)
    assert item.given_up_at and item.payload is None
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "outbox.given_up"))
    assert record.details["kind"] == "mail" and record.details["attempts"] == 2


def test_development_without_smtp_writes_each_message_to_a_file_it_names(make_app, setup, caplog):
    from authsvc.mail.transport import MAIL_DIR

    app = make_app()
    queue_messages(app, 1)
    with caplog.at_level(logging.INFO, logger="authsvc.mail.transport"):
        assert deliver(app) == 1
    [line] = [r.getMessage() for r in caplog.records if r.name == "authsvc.mail.transport"]
    path = line.rsplit(" ", 1)[1]
    assert path.startswith(str(MAIL_DIR)) and path.endswith(".eml")
    with open(path, "rb") as written:
        assert b"To: person0@example.com" in written.read()


def test_an_smtp_url_of_the_wrong_form_stops_the_start(monkeypatch):
    from config.settings import ConfigError, from_environment

    monkeypatch.setenv("AUTHSVC_SMTP_URL", "http://mail.example.com")
    with pytest.raises(ConfigError, match="AUTHSVC_SMTP_URL"):
        from_environment()


def test_finished_items_are_deleted_after_a_week(make_app, smtp, setup, clock):
    app = make_app(**mail_config(smtp))
    queue_messages(app, 2)
    deliver(app)
    clock.advance(6 * 86400)
    queue_messages(app, 1)
    deliver(app)
    assert len(outbox_items(app)) == 3, "a week is kept"
    clock.advance(86400 + 1)
    deliver(app)  # a new sender purges at its first round
    [kept] = outbox_items(app)
    assert kept.done_at and kept.id == 3


def test_a_message_queued_in_a_process_wakes_its_sender_at_once(make_app, smtp, setup):
    app = make_app(**mail_config(smtp, AUTHSVC_OUTBOX_POLL=60))
    sender = Sender(app, name="waiting")
    sender.start()
    try:
        time.sleep(0.2)  # its first round found nothing: it now waits up to a minute for the next
        app.test_client_class = HttpsClient
        assert ask(app.test_client()).status_code == 200
        assert len(smtp.wait_for("person@example.com", timeout=10)) == 1
    finally:
        sender.stop()


@pytest.mark.parametrize("value", ["Accounts <accounts@example.com>", "accounts", "a b@example.com"])
def test_a_from_address_of_the_wrong_form_stops_the_start(monkeypatch, value):
    from config.settings import ConfigError, from_environment

    monkeypatch.setenv("AUTHSVC_MAIL_FROM", value)
    with pytest.raises(ConfigError, match="AUTHSVC_MAIL_FROM"):
        from_environment()
