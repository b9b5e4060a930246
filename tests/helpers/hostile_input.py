"""For the hostile input tests (tests/api/fuzz/test_hostile_input.py, tests/api/fuzz/test_hostile_input_bodies.py):
a client of an app with a domain, its applications, a person, a service account and an API key."""

from __future__ import annotations

import pytest

from tests.helpers import HOST, HttpsClient


@pytest.fixture
def hostile_client(app, world):
    domain = world.domain(HOST)
    world.application(domain)
    world.application(domain, confidential=True, name="Confidential")
    person = world.user(domain, "person@example.com")
    world.user(domain, "service@example.com", service_account=True)
    world.api_key(person)
    app.test_client_class = HttpsClient
    return app.test_client()
