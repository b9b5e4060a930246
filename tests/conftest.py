"""Fixtures: a real database and store for every test, clean at its start.

``scripts/test`` runs this suite twice: against PostgreSQL and Redis
(``TEST_DATABASE_URL``, ``TEST_REDIS_URL``) and against the embedded defaults
(SQLite and the in-process store).
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from flask.testing import FlaskClient
from sqlalchemy import create_engine, text

_tmp = Path(tempfile.mkdtemp(prefix="authsvc-test-"))
os.environ["AUTHSVC_INSTANCE_DIR"] = str(_tmp / "instance")
for _name in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "AUTHSVC_ENV", "AUTHSVC_DEFAULT_DOMAIN"):
    os.environ.pop(_name, None)

from authsvc import create_app  # noqa: E402
from authsvc.core import security  # noqa: E402
from authsvc.core.database import db  # noqa: E402
from authsvc.core.models import ApiKey, Application, Domain, User  # noqa: E402

BACKEND = os.environ.get("AUTHSVC_TEST_BACKEND") or ("postgresql" if os.environ.get("TEST_DATABASE_URL") else "sqlite")
HOST = "auth.example.com"
OTHER_HOST = "other.example.com"
REDIRECT_URI = "https://app.example.com/callback"
PASSWORD = "correct horse battery staple"


def _database_url() -> str:
    if BACKEND == "postgresql":
        url = os.environ.get("TEST_DATABASE_URL")
        if not url:
            pytest.exit("AUTHSVC_TEST_BACKEND=postgresql needs TEST_DATABASE_URL (scripts/test sets it)", 2)
        from config.settings import database_url

        return database_url(url)
    return f"sqlite:///{_tmp / 'test.sqlite3'}"


def _redis_url() -> str | None:
    return os.environ.get("TEST_REDIS_URL") if BACKEND == "postgresql" else None


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


def _empty_database(app) -> None:
    tables = [t.name for t in reversed(db.metadata.sorted_tables)]
    with db.engine.begin() as conn:
        if BACKEND == "postgresql":
            conn.execute(text("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " RESTART IDENTITY CASCADE"))
        else:
            for table in tables:
                conn.execute(text(f'DELETE FROM "{table}"'))  # noqa: S608 - names from our metadata


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
