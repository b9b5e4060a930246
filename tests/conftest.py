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

import base64
import hashlib
import os
import secrets
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import pytest
from flask.testing import FlaskClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

_tmp = Path(tempfile.mkdtemp(prefix="authsvc-test-"))
os.environ["AUTHSVC_INSTANCE_DIR"] = str(_tmp / "instance")
for _name in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "AUTHSVC_ENV", "AUTHSVC_DEFAULT_DOMAIN"):
    os.environ.pop(_name, None)

from authsvc import create_app  # noqa: E402
from authsvc.core import security  # noqa: E402
from authsvc.core.database import db  # noqa: E402
from authsvc.core.models import ApiKey, Application, Domain, User  # noqa: E402
from tests.routing_cache import share_url_builders  # noqa: E402

share_url_builders()

BACKEND = os.environ.get("AUTHSVC_TEST_BACKEND") or ("postgresql" if os.environ.get("TEST_DATABASE_URL") else "sqlite")
# "gw0", "gw1", ... in a pytest-xdist worker; None in a run without -n.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
HOST = "auth.example.com"
OTHER_HOST = "other.example.com"
REDIRECT_URI = "https://app.example.com/callback"
PASSWORD = "correct horse battery staple"
# serve_forever() looks for shutdown() every poll_interval (0.5 s by default):
# every loopback server of the tests stops at once with this.
QUICK_SHUTDOWN = {"poll_interval": 0.01}


def _database_url() -> str:
    if BACKEND == "postgresql":
        url = os.environ.get("TEST_DATABASE_URL")
        if not url:
            pytest.exit("AUTHSVC_TEST_BACKEND=postgresql needs TEST_DATABASE_URL (scripts/test sets it)", 2)
        from config.settings import database_url

        url = database_url(url)
        if WORKER:
            # Made in pytest_configure, dropped in pytest_unconfigure.
            parsed = make_url(url)
            url = parsed.set(database=f"{parsed.database}_{WORKER}").render_as_string(hide_password=False)
        return url
    return f"sqlite:///{_tmp / 'test.sqlite3'}"


def _redis_url() -> str | None:
    return os.environ.get("TEST_REDIS_URL") if BACKEND == "postgresql" else None


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
        _worker_services = Services(say=lambda message: None, workdir=_tmp / "services")
        (_tmp / "services").mkdir()
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
SPREAD = {"tests/test_openapi_schemathesis.py", "tests/test_hostile_input.py", "tests/test_hostile_input_bodies.py"}


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.split("::", 1)[0] in SPREAD:
                return nodeid
            return super()._split_scope(nodeid)

    return Scheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if BACKEND != "postgresql":
        skip = pytest.mark.skip(reason="needs the PostgreSQL backend")
        for item in items:
            if "postgresql" in item.keywords:
                item.add_marker(skip)


def base_config() -> dict:
    return {
        "TESTING": True,
        "SECRET_KEY": "test-secret-key",
        "SQLALCHEMY_DATABASE_URI": DATABASE_URL,
        "REDIS_URL": _redis_url(),
        # Cheap hashes keep the suite fast; the cost is a setting, not logic.
        "AUTHSVC_BCRYPT_ROUNDS": 4,
        # Tests sign in far faster than people do; tests/test_limits.py sets
        # the rates it is about.
        "AUTHSVC_SIGNIN_RATE_LIMIT": "10000/minute",
        "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT": "10000/minute",
        "AUTHSVC_TOKEN_RATE_LIMIT": "10000/minute",
        "AUTHSVC_SSO_START_RATE_LIMIT": "10000/minute",
        # The peers the tests call are threads of this process, slow on a loaded machine (a SAML IdP's
        # first metadata loads XML schemas); the deadline's own tests set it to 1 s.
        "AUTHSVC_OUTBOUND_DEADLINE": 25,
        "AUTHSVC_SCIM_RATE_LIMIT": "10000/minute",
    }


DATABASE_URL = _database_url()


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
    with app.app_context():
        from flask_migrate import upgrade

        upgrade()
        db.engine.dispose()
    return DATABASE_URL


# The identity sequences of the schema (PostgreSQL), read at the first emptying.
_sequence_resets: list[str] | None = None


def _empty_database(app) -> None:
    """Every table emptied and every id counting from 1 again, as in a new database.

    DELETE, not TRUNCATE: on tables this small TRUNCATE's new files cost 35-120 ms
    a test, DELETE 1-4 ms. On PostgreSQL the identity sequences are reset
    too (TRUNCATE's RESTART IDENTITY); SQLite's rowids restart by themselves.
    """
    tables = [t.name for t in reversed(db.metadata.sorted_tables)]
    statements = [f'DELETE FROM "{table}"' for table in tables]  # noqa: S608 - names from our metadata
    with db.engine.begin() as conn:
        if BACKEND == "postgresql":
            global _sequence_resets
            if _sequence_resets is None:
                found = conn.execute(text("SELECT schemaname, sequencename FROM pg_sequences")).all()
                _sequence_resets = [f'setval(\'"{schema}"."{name}"\', 1, false)' for schema, name in found]
            if _sequence_resets:
                statements.append("SELECT " + ", ".join(_sequence_resets))
            # One round trip: psycopg sends a parameterless string of statements as one query.
            conn.exec_driver_sql("; ".join(statements))
        else:
            for statement in statements:
                conn.exec_driver_sql(statement)


@pytest.fixture
def make_app(schema):
    """Build an app on the test database with extra settings; cleaned before use."""
    made = []

    def make(**config):
        app = create_app({**base_config(), **config})
        made.append(app)
        return app

    yield make
    for app in made:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()


@pytest.fixture
def app(make_app):
    app = make_app()
    with app.app_context():
        _empty_database(app)
        from authsvc.core import store

        store.client().flushdb()
    return app


class HttpsClient(FlaskClient):
    """A test client that speaks https, as a deployment behind TLS does: OAuth 2.0 needs it."""

    def open(self, *args, **kwargs):
        kwargs.setdefault("base_url", f"https://{HOST}")
        return super().open(*args, **kwargs)


@pytest.fixture
def client(app):
    app.test_client_class = HttpsClient
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


class World:
    """Records the tests build on, created through the models.

    Each is saved in an app context of its own and handed back detached, so
    that no test request shares a database session with the test itself.
    """

    def __init__(self, app):
        self.app = app

    def save(self, record):
        with self.app.app_context():
            db.session.add(record)
            db.session.commit()
            db.session.refresh(record)
            db.session.expunge(record)
        return record

    def domain(self, host: str = HOST, scopes: str = "public mqtt.read mqtt.write") -> Domain:
        return self.save(Domain(name=host, host=host, scopes=scopes))

    def application(self, domain: Domain, *, confidential: bool = False, **fields) -> tuple[Application, str | None]:
        """An application; in the legacy mode (no PKCE required) unless asked, as most tests run the
        specification's flow literally. tests/test_authorize.py covers the default of a new application."""
        fields.setdefault("require_pkce", False)
        secret = security.new_secret() if confidential else None
        application = Application(
            domain_id=domain.id,
            name=fields.pop("name", "Test app"),
            client_id=fields.pop("client_id", secrets.token_urlsafe(16)),
            client_secret_digest=security.digest(secret) if secret else None,
            redirect_uris=fields.pop("redirect_uris", [REDIRECT_URI]),
            scopes=fields.pop("scopes", "public mqtt.read"),
            **fields,
        )
        return self.save(application), secret

    def user(self, domain: Domain, email: str = "user@example.com", password: str = PASSWORD, **fields) -> User:
        # As an admin makes one, who vouches for the address.
        fields.setdefault("email_verified", True)
        user = User(domain_id=domain.id, email=email, name=fields.pop("name", "Test User"), **fields)
        with self.app.app_context():
            user.set_password(password)
        return self.save(user)

    def api_key(self, user: User, scopes: str = "public", **fields) -> str:
        secret = security.new_secret()
        key = ApiKey(
            id=secrets.token_hex(8),
            domain_id=user.domain_id,
            user_id=user.id,
            name="test key",
            secret_digest=security.digest(secret),
            scopes=scopes,
            **fields,
        )
        self.save(key)
        return f"{key.id}.{secret}"

    def update(self, model, id_, **fields) -> None:
        with self.app.app_context():
            record = db.session.get(model, id_)
            for name, value in fields.items():
                setattr(record, name, value)
            db.session.commit()

    def query(self, statement):
        """Run a SELECT in a fresh session and return all rows' scalars."""
        with self.app.app_context():
            return list(db.session.scalars(statement))


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


def headers(host: str = HOST, **extra) -> dict:
    return {"Host": host, **extra}


def signin(client, email: str = "person@example.com", password: str = PASSWORD, host: str = HOST) -> str:
    """Sign in and return the ``user`` cookie's value."""
    response = client.post("/auth/signin", query_string={"email": email, "password": password}, headers=headers(host))
    assert response.status_code == 202, response.get_json()
    return client.get_cookie("user", domain=host.split(":")[0]).value


def pkce_pair(verifier: str | None = None) -> tuple[str, str]:
    verifier = verifier or secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize(client, client_id: str, *, host: str = HOST, **params) -> object:
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "scope": "public"}
    query.update(params)
    query = {k: v for k, v in query.items() if v is not None}
    return client.get("/auth/oauth/authorize", query_string=query, headers=headers(host))


def location_params(response) -> dict[str, str]:
    parts = urlsplit(response.headers["Location"])
    return {k: v[0] for k, v in parse_qs(parts.query).items()}


def get_code(client, client_id: str, **params) -> str:
    response = authorize(client, client_id, **params)
    assert response.status_code == 302, response.get_data(as_text=True)
    return location_params(response)["code"]


OIDC_SCOPES = "public openid profile email groups"


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
