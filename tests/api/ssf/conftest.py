"""Fixtures of the Shared Signals tests: the service on loopback, a receiving application with the reserved
`ssf` scope and its token, a push receiver on loopback that verifies every SET, and the worker's sender."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.helpers import webhooks
from tests.helpers.ssf import PushReceiver, Served, Verifier, receiver_token, ssf_sender

app = webhooks.app  # loopback receivers allowed, quick retries


@dataclass
class Receiving:
    client_id: str
    secret: str
    token: str


@pytest.fixture
def served(app):
    made = Served(app)
    yield made
    made.stop()


@pytest.fixture
def receiving(client, world, setup) -> Receiving:
    """An application a domain admin allowed `ssf`, bound to a service account (client credentials need one)."""
    application, secret = world.application(
        setup.domain, confidential=True, service_account_id=setup.service.id, redirect_uris=[], scopes="ssf"
    )
    return Receiving(application.client_id, secret, receiver_token(client, application.client_id, secret))


@pytest.fixture
def verifier(served, receiving) -> Verifier:
    return Verifier(served, receiving.client_id)


@pytest.fixture
def pushed(verifier):
    made = PushReceiver()
    made.verifier = verifier
    yield made
    made.stop()


@pytest.fixture
def worker(app):
    """A worker's sender thread, running for the test (woken by each commit that queues a SET)."""
    sender = ssf_sender(app)
    sender.start()
    yield sender
    sender.stop()
