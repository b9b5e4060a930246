"""Fixtures: a real database and store for every test, clean at its start.

``scripts/test`` runs this suite twice: against PostgreSQL and Redis
(``TEST_DATABASE_URL``, ``TEST_REDIS_URL``) and against the embedded defaults
(SQLite and the in-process store).

Under pytest-xdist (``-n``) each worker has its own of everything a test may
empty or fill: a PostgreSQL database ``<TEST_DATABASE_URL's>_gwN`` that it
creates and drops, a private redis-server (pub/sub is server-wide, so a Redis
database number per worker would not be enough), a temporary directory (and
SQLite file), and pytest's ``tmp_path``. The test command distributes whole
modules (``--dist loadscope``), so that a module-scoped fixture (a gunicorn, a
browser, a directory) starts once.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

# scim2-models builds its pydantic models at import, reading each class's attribute docstrings through
# inspect.getmodule, which walks sys.modules once per class: imported here, before the app and the helpers
# (about 650 modules loaded instead of 1,400 and more), it costs 0.5-0.7 CPU-seconds instead of 1.6-2.5 in
# each pytest process of a run (8) that collects the SCIM tests.
import scim2_models  # noqa: F401 - imported first, for the reason above
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.helpers import (
    BACKEND,
    DATABASE_URL,
    OIDC_SCOPES,
    TMP,
    WORKER,
    HttpsClient,
    World,
    admin_api,
    base_config,
    clear_of_a_minute_boundary,
    client_registration,
    console,
    empty_database,
    ldap,
    oidc_logout,
    saml,
    sso,
)
from tests.helpers import key_server as key_server_helpers
from tests.helpers import scim as scim_helpers
from tests.helpers.kept_apps import KeptApps

# isort: split
# After tests.helpers, which prepares the environment (no developer settings) first.
from authsvc import create_app
from authsvc.cli import migrations
from authsvc.core import store
from authsvc.core.database import db

_worker_services = None


def _worker_database(create: bool) -> None:
    """(Re)create, or drop, this worker's database, through the database TEST_DATABASE_URL names."""
    import psycopg
    from psycopg import sql

    name = make_url(DATABASE_URL).database
    try:
        with psycopg.connect(os.environ["TEST_DATABASE_URL"], autocommit=True, connect_timeout=10) as conn:
            # WITH (FORCE) (PostgreSQL 13+): a gunicorn of an interrupted test may still hold a session.
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            if create:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                # A throwaway database: a commit need not wait for its WAL to reach the disk
                # (the private cluster of devtools.services runs with fsync off altogether).
                conn.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = off").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        if create:
            pytest.exit(
                f"pytest-xdist worker {WORKER}: cannot create its database {name} ({exc}); the role of "
                "TEST_DATABASE_URL needs CREATEDB, or run without -n (AUTHSVC_TEST_WORKERS=0)",
                2,
            )


def _worker_redis() -> None:
    """A private redis-server for this worker, unless the developer gave their own Redis.

    With AUTHSVC_TEST_REDIS_URL (or no redis-server binary) each worker takes a
    database number of its own instead: gwN uses DB+N, or DB-N when DB is 8 or
    more (the shared fallback is 15). Pub/sub is then shared between workers.
    """
    global _worker_services
    given = [name for name in ("TEST_REDIS_URL", "AUTHSVC_TEST_REAL_REDIS_URL") if os.environ.get(name)]
    if not given:
        return
    from devtools.services import Services, redis_server

    if redis_server() and not os.environ.get("AUTHSVC_TEST_REDIS_URL"):
        _worker_services = Services(say=lambda message: None, workdir=TMP / "services")
        (TMP / "services").mkdir()
        url = _worker_services.redis()
        if url:
            for name in given:
                os.environ[name] = url
            return
    index = int(WORKER.removeprefix("gw"))
    for name in given:
        parts = urlsplit(os.environ[name])
        base = int(parts.path.strip("/") or 0)
        number = base - index if base >= 8 else base + index
        os.environ[name] = urlunsplit(parts._replace(path=f"/{number}"))


def pytest_configure(config: pytest.Config) -> None:
    if not WORKER:
        return
    if BACKEND == "postgresql":
        _worker_database(create=True)
    _worker_redis()


def pytest_unconfigure(config: pytest.Config) -> None:
    if not WORKER:
        return
    if BACKEND == "postgresql":
        _worker_database(create=False)
    if _worker_services is not None:
        _worker_services.close()


# Modules whose tests share nothing per module (no module-scoped server): under --dist loadscope
# their tests go to any worker, one by one. Each held one worker for a third of a pass (the
# schemathesis module: 1,900 of 7,060 test-seconds of a pass) while the others had finished.
SPREAD = {
    "tests/api/fuzz/test_openapi_schemathesis.py",
    "tests/api/fuzz/test_hostile_input.py",
    "tests/api/fuzz/test_hostile_input_bodies.py",
    "tests/api/fuzz/test_hostile_input_scim.py",
}


# Modules of long tests that share a slow set-up per worker: one unit, handed to the first free worker before
# every module (loadscope hands out the modules with the most tests first, and units of one test last, where a
# test of minutes would end the pass alone). The documentation's pages (a test a page, one ./scripts/run and one
# run of the README's flows and of the sections pages continue from, for every worker that takes a page): spread
# over three workers, each paid the service and those sections again, 115 CPU-seconds against 78 on one, in the
# same 82 s of wall time alone; on one worker, first, they end long before the pass does. The SPREAD tests (short,
# hundreds, each a unit of one test) go last, after every module: among the other one-test units, in the order of
# collection, they came before tests/e2e's modules of one or two long tests (a failover drill, the SCIM
# compliance run, the run command: 1-2 minutes each on a loaded machine), which then started at a
# pass's end and ended it alone; now they fill the end of a pass, a worker taking the next as it frees.
DOCS = "tests/e2e/test_docs_run.py"
FIRST = (DOCS,)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without it (-p no:xdist) pytest would refuse to start
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path in SPREAD:
                return nodeid
            return super()._split_scope(nodeid)

        ordered = False

        def _assign_work_unit(self, node) -> None:  # noqa: ANN001 - xdist's WorkerController
            if not self.ordered:
                self.ordered = True
                for scope in [scope for scope in self.workqueue if scope.split("::", 1)[0] in SPREAD]:
                    self.workqueue.move_to_end(scope)
                for scope in reversed([scope for scope in self.workqueue if scope.split("::", 1)[0] in FIRST]):
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return Scheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if BACKEND != "postgresql":
        skip = pytest.mark.skip(reason="needs the PostgreSQL backend")
        for item in items:
            if "postgresql" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def schema() -> str:
    """Build the schema once per run, through the migrations a deployment uses."""
    engine = create_engine(DATABASE_URL)
    with engine.begin() as conn:
        if BACKEND == "postgresql":
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    if BACKEND == "sqlite":
        Path(DATABASE_URL.removeprefix("sqlite:///")).unlink(missing_ok=True)
    app = create_app(base_config())
    migrations.install(app)
    with app.app_context():
        from flask_migrate import upgrade

        upgrade()
        db.engine.dispose()
    return DATABASE_URL


_apps = KeptApps()


@pytest.fixture
def make_app(schema):
    """An app on the test database with extra settings (a kept one when a test left it as made)."""
    made = []
    handed: set = set()

    def make(fresh: bool = False, **config):
        """``fresh``: a new app for a test that adds routes, which Flask allows only before a first request."""
        if any(name.endswith("_RATE_LIMIT") for name in config):
            clear_of_a_minute_boundary()  # a test that counts up to a rate runs inside one window
        app = _apps.get({**base_config(), **config}, handed, fresh)
        made.append(app)
        return app

    yield make
    for app in dict.fromkeys(made):
        _apps.release(app)


@pytest.fixture
def app(make_app):
    app = make_app()
    with app.app_context():
        empty_database(app)
        store.client().flushdb()
        app.extensions["authsvc.limiter"].reset()
    return app


@pytest.fixture
def clock():
    """The service's clock (authsvc.core.clock), to move forward instead of sleeping; put back after the test.

    Only what the code decides by the time moves: Redis still expires keys by its own clock.
    """
    from authsvc.core import clock

    clock.reset()
    yield clock
    clock.reset()


@pytest.fixture
def client(app):
    app.test_client_class = HttpsClient
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def world(app):
    return World(app)


@pytest.fixture
def setup(world):
    """A domain with a public application, a confidential one, a person and a service account."""

    class Setup:
        domain = world.domain()
        public_app, _ = world.application(domain)
        confidential_app, client_secret = world.application(domain, confidential=True, name="Confidential")
        person = world.user(domain, "person@example.com", name="Person")
        service = world.user(domain, "service@example.com", service_account=True, name="Service")

    return Setup


@pytest.fixture
def oidc(world):
    """A domain whose scopes include OpenID Connect's, an application that may ask them, and a person."""

    class Oidc:
        domain = world.domain(scopes=OIDC_SCOPES)
        app, secret = world.application(domain, confidential=True, scopes=OIDC_SCOPES)
        es256_app, es256_secret = world.application(
            domain, confidential=True, scopes=OIDC_SCOPES, id_token_signed_response_alg="ES256", name="ES"
        )
        person = world.user(domain, "person@example.com", name="Person", groups=["staff", "ops"])

    return Oidc


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The documentation test's counts (tests/e2e/test_docs_run.py): blocks run and skipped, per page."""
    lines = [
        value
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, [])
        if report.when == "call"
        for name, value in getattr(report, "user_properties", [])
        if name == "docs"
    ]
    if lines:
        terminalreporter.section("documentation")
        for line in lines:
            terminalreporter.write_line(line)


# Fixtures of tests/helpers/ that the tests of several groups use; a group's own are in its conftest.py.
key_server = key_server_helpers.key_server
keys = admin_api.keys
people = console.people
domain = client_registration.domain
issue = client_registration.issue
scim = scim_helpers.scim
receiver = oidc_logout.receiver
rp = oidc_logout.rp
corp = ldap.corp
directory = ldap.directory
idp = saml.idp
saml_provider = saml.saml_provider
admin_key = sso.admin_key
oauth2 = sso.oauth2
oauth2_id = sso.oauth2_id
oidc_id = sso.oidc_id
