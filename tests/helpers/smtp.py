"""A real SMTP server on loopback (aiosmtpd), which keeps what it receives; and a hand to run the outbox.

The service's mail goes through smtplib to this server over TCP, as it would
to a deployment's relay: nothing of our mailer is replaced. ``stop`` and
``start`` take the server down and bring it back on the same port, which is
how the tests make SMTP unavailable.
"""

from __future__ import annotations

import email
import email.policy
import logging
import re
import socket
import threading
import time
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller

from authsvc.core.database import db
from authsvc.outbox import OutboxItem
from authsvc.outbox.sender import Sender

# aiosmtpd logs every command it receives at INFO.
logging.getLogger("mail.log").setLevel(logging.WARNING)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SmtpServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.received: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self._lock = threading.Lock()
        self._controller: Controller | None = None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802, ANN001 - aiosmtpd's hook
        message = email.message_from_bytes(envelope.content, _class=EmailMessage, policy=email.policy.default)
        with self._lock:
            self.received.append(message)
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 OK"

    def start(self) -> None:
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port, ready_timeout=5)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def clear(self) -> None:
        with self._lock:
            self.received.clear()
            self.envelopes.clear()

    def to(self, address: str) -> list[EmailMessage]:
        with self._lock:
            return [m for m in self.received if m["To"] == address]

    def wait_for(self, address: str, count: int = 1, timeout: float = 10.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while len(self.to(address)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.to(address)


def text_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None, "the message has a text part"
    return part.get_content()


def html_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("html",))
    assert part is not None, "the message has an HTML part"
    return part.get_content()


def link_in(message: EmailMessage) -> str:
    """The one link of ``message``'s text part that carries a token."""
    [link] = re.findall(r"https?://\S+\?token=\S+", text_of(message))
    return link


def deliver(app, rounds: int = 6) -> int:
    """Run the outbox's sender of ``app`` until nothing is left to do now (what a worker's thread does)."""
    handled = 0
    sender = Sender(app, name="test")
    for _ in range(rounds):
        done = sender.run_once()
        handled += done
        if not done:
            break
    return handled


def outbox_items(app, kind: str | None = None) -> list[OutboxItem]:
    with app.app_context():
        query = db.select(OutboxItem).order_by(OutboxItem.id)
        if kind is not None:
            query = query.where(OutboxItem.kind == kind)
        items = list(db.session.scalars(query))
        db.session.remove()
        return items


def mail_config(server: SmtpServer, **extra) -> dict:
    """Settings of an app that mails ``server``, with waits short enough for tests."""
    return {
        "AUTHSVC_SMTP_URL": server.url,
        "AUTHSVC_MAIL_FROM": "accounts@example.com",
        # The service's default wait. A shorter one, on a busy machine, can run out after the server took a
        # message: the sender then tries again and the message arrives twice (at least once, as SMTP allows).
        "AUTHSVC_MAIL_TIMEOUT": 10,
        "AUTHSVC_OUTBOX_BACKOFF": 0.05,
        "AUTHSVC_OUTBOX_POLL": 0.05,
        **extra,
    }


def emptied(app):
    """``app`` on an empty database and store, as the suite's ``app`` fixture gives it."""
    from authsvc.core import store
    from tests.helpers import empty_database

    with app.app_context():
        empty_database(app)
        store.client().flushdb()
    return app


@pytest.fixture(scope="module")
def smtp_server():
    server = SmtpServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def smtp(smtp_server):
    """The module's SMTP server, running and with nothing received yet."""
    if smtp_server._controller is None:
        smtp_server.start()
    smtp_server.clear()
    return smtp_server


@pytest.fixture
def mail_app(make_app, smtp):
    """The suite's app (an empty database), sending e-mail to ``smtp``."""
    return emptied(make_app(**mail_config(smtp)))
