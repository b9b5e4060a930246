"""For the hostile input tests (tests/api/fuzz/test_hostile_input.py, tests/api/fuzz/test_hostile_input_bodies.py):
a client of an app with a domain, its applications, a person, a service account and an API key."""

from __future__ import annotations

import pytest

from tests.helpers import HOST, HttpsClient, World
from tests.helpers.world_snapshot import WorldSnapshot

# The records, made through the models at a worker's first hostile test and put back as rows for each
# test after it (tests/helpers/world_snapshot.py): the same rows, without a commit and a refresh a record.
_records: WorldSnapshot | None = None


def _build(world: World) -> None:
    domain = world.domain(HOST)
    world.application(domain)
    world.application(domain, confidential=True, name="Confidential")
    person = world.user(domain, "person@example.com")
    world.user(domain, "service@example.com", service_account=True)
    world.api_key(person)


@pytest.fixture
def hostile_client(app, world):
    global _records
    if _records is None:
        _records = WorldSnapshot(app, lambda: _build(world))
    else:
        _records.restore(app)
    app.test_client_class = HttpsClient
    return app.test_client()
