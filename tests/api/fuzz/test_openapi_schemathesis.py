"""The running app answers as the OpenAPI document says: schemathesis generates requests for every
operation (valid and invalid input) and checks each answer against the document.

Schemathesis against the app, through WSGI. Its client sends Host: localhost.
(Its pytest loader, schemathesis.pytest.from_fixture, relies on a pytest
internal that pytest 9 removed; the operations' Hypothesis strategies are
its documented way to be used from plain tests.)
"""

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from authsvc import create_app
from authsvc.core import store
from authsvc.core.database import db
from authsvc.core.models import Domain
from tests.helpers import World, base_config, fuzz_examples
from tests.helpers.openapi_document import ADMIN_OPERATIONS, DOCUMENT, OPERATIONS
from tests.helpers.world_snapshot import WorldSnapshot

# Negative data needs something to break: operations without any input have none.
WITH_INPUT = [
    (path, method)
    for path, method in OPERATIONS
    if {"parameters", "requestBody", "security"} & set(DOCUMENT["paths"][path][method])
]
# Per operation and mode (tests.helpers.fuzz_examples: fewer on the SQLite pass).
EXAMPLES = fuzz_examples(4)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="session")
def served(schema):
    """One app and one loaded document for the module's 300 cases: building them was most of a case's time."""
    app = create_app(base_config())
    yield app, schemathesis.openapi.from_wsgi("/api/engine/v2/openapi.json", app)
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


def _records(world: World) -> Domain:
    """The records every case starts with."""
    domain = world.domain("localhost")
    world.application(domain, scopes="public mqtt.read")
    world.application(domain, confidential=True, name="Resource server")
    service = world.user(domain, "service@localhost", service_account=True)
    world.user(domain, "person@localhost", admin=True)
    world.api_key(service)
    return domain


# The records are made through the models once a worker, then put back as rows for each case
# (tests/helpers/world_snapshot.py): making them was a tenth of a test's time.
@pytest.fixture(scope="session")
def records(served):
    app, _ = served
    return WorldSnapshot(app, lambda: _records(World(app)))


@pytest.fixture(scope="session")
def admin_records(served):
    """The same records and a system admin's API key (what the admin cases send)."""
    app, _ = served

    def build() -> str:
        world = World(app)
        domain = _records(world)
        root = world.user(domain, "root@localhost", admin=True, system_admin=True)
        return world.api_key(root, scopes="public admin", permission="admin")

    return WorldSnapshot(app, build)


def _fresh(app, records: WorldSnapshot):
    """Every case starts as on a new app: tables, store and request counts empty, then the same records."""
    with app.app_context():
        store.client().flushdb()
        app.extensions["authsvc.limiter"].reset()
    return records.restore(app)


@pytest.fixture
def api_schema(served, records):
    _fresh(served[0], records)
    return served[1]


@pytest.fixture
def admin_key(served, admin_records) -> str:
    return _fresh(served[0], admin_records)


@pytest.mark.parametrize(
    "path,method,mode",
    [(*op, GenerationMode.POSITIVE) for op in OPERATIONS] + [(*op, GenerationMode.NEGATIVE) for op in WITH_INPUT],
)
def test_the_app_answers_as_the_document_says(api_schema, path, method, mode):
    operation = api_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def answers_as_documented(case):
        case.call_and_validate(checks=CHECKS)

    answers_as_documented()


# The admin API behind a credential: fuzzing finds none, so give every case a
# system admin's API key (in place of the credentials it generated), and the
# bodies and parameters reach the admin verbs.
CREDENTIALS = {"Authorization", "X-API-Key", "bearer_token", "api-key"}


@pytest.mark.parametrize(
    "path,method,mode",
    [(*op, GenerationMode.POSITIVE) for op in ADMIN_OPERATIONS]
    + [(*op, GenerationMode.NEGATIVE) for op in ADMIN_OPERATIONS],
)
def test_the_admin_api_answers_an_admin_as_the_document_says(served, admin_key, path, method, mode):
    operation = served[1][path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def answers_as_documented(case):
        for carrier in (case.headers, case.query, case.cookies):
            for name in CREDENTIALS & set(carrier or {}):
                del carrier[name]
        case.call_and_validate(headers={"X-API-Key": admin_key}, checks=CHECKS)

    answers_as_documented()
