"""Webhooks for the tests: a receiver on loopback that records what it is POSTed, and may be down, refuse, or
hang; an app that may reach it, with quick retries; and a hand to run the outbox's webhook sender."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import select

from authsvc.core.database import db
from authsvc.outbox import OutboxItem
from authsvc.outbox.sender import Sender
from tests.helpers import QUICK_SHUTDOWN, empty_database

# Loopback receivers need the operator's setting; retries are quick, and capped quickly, here.
CONFIG = {
    "AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS": True,
    "AUTHSVC_WEBHOOK_BACKOFF": 0.05,
    "AUTHSVC_WEBHOOK_LONGEST_WAIT": 0.2,
    "AUTHSVC_OUTBOUND_DEADLINE": 2,
    "AUTHSVC_OUTBOX_POLL": 0.05,
}


class Receiver:
    """A webhook receiver on loopback: records each POST (headers, body) and answers ``status``; ``hang``
    seconds of silence first, if set. ``stop`` and ``start`` take it down and up on the same port."""

    def __init__(self, status: int = 200, hang: float = 0):
        self.status, self.hang = status, hang
        self.received: list[dict] = []
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.start()
        self.url = f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length).decode()
                if receiver.hang:
                    time.sleep(receiver.hang)
                if receiver.status < 300:
                    receiver.received.append({"headers": dict(self.headers), "body": data})
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def events(self) -> list[dict]:
        return [json.loads(entry["body"]) for entry in self.received]

    def wait(self, count: int, timeout: float = 10) -> list[dict]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.received


@pytest.fixture
def receiver():
    made = Receiver()
    yield made
    made.stop()


@pytest.fixture
def app(make_app):
    from authsvc.core import store

    app = make_app(**CONFIG)
    with app.app_context():
        empty_database(app)
        store.client().flushdb()
    return app


def webhook_sender(app, name: str = "test") -> Sender:
    """The sender a worker runs for webhooks: its own, a few deliveries at once."""
    return Sender(app, name=name, kinds=["webhook"], workers=4)


def deliver(app, rounds: int = 20) -> None:
    """Run the webhook sender until nothing is waiting now (what a worker's thread does)."""
    sender = webhook_sender(app)
    for _ in range(rounds):
        if not sender.run_once():
            return


def deliveries(app) -> list[OutboxItem]:
    with app.app_context():
        items = list(db.session.scalars(select(OutboxItem).where(OutboxItem.kind == "webhook").order_by(OutboxItem.id)))
        db.session.remove()
        return items
