"""What the tests build on: the test database and store, the records a test makes, and the requests
most tests send (sign in, authorise, exchange a code).

Tests import these from here; tests/conftest.py holds only pytest's hooks and the fixtures. Importing
this module first prepares the environment (a temporary directory, no developer settings), before
authsvc is imported.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from flask.testing import FlaskClient
from sqlalchemy import text
from sqlalchemy.engine import make_url

TMP = Path(tempfile.mkdtemp(prefix="authsvc-test-"))
os.environ["AUTHSVC_INSTANCE_DIR"] = str(TMP / "instance")
for _name in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "AUTHSVC_ENV", "AUTHSVC_DEFAULT_DOMAIN"):
    os.environ.pop(_name, None)

from authsvc.core import security  # noqa: E402
from authsvc.core.database import db  # noqa: E402
from authsvc.core.models import ApiKey, Application, Domain, User  # noqa: E402
from tests.helpers.routing_cache import share_url_builders  # noqa: E402

# Every app of the suite shares the URL builders werkzeug compiles per route (tests/helpers/routing_cache.py).
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
    return f"sqlite:///{_sqlite_dir() / 'test.sqlite3'}"


def _sqlite_dir() -> Path:
    """Memory-backed where the machine has it: each SQLite commit waits for several fsyncs of the
    journal and the file (5-25 ms a commit on this machine's disk), which a throwaway database
    does not need. The app's own SQLite settings are the deployment's, unchanged."""
    shm = Path("/dev/shm")  # noqa: S108 - mkdtemp below makes a private directory in it
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return TMP
    made = Path(tempfile.mkdtemp(prefix="authsvc-test-", dir=shm))
    atexit.register(shutil.rmtree, made, ignore_errors=True)
    return made


def fuzz_examples(production: int) -> int:
    """Hypothesis examples per fuzzing test (hostile input, schemathesis) in this pass.

    ``production`` against PostgreSQL and Redis, the deployment's backends, where the search
    happens; one example of each case on the SQLite pass when the PostgreSQL pass runs beside it in
    the same command (every operation and input class still reaches SQLite once): fuzzing was half
    of each pass's time, and what it finds is mostly in the request handling both passes share.
    A SQLite pass alone (``AUTHSVC_TEST_BACKENDS=sqlite``, or pytest run directly) fuzzes in full.
    Each pass draws its own random examples. ``AUTHSVC_HOSTILE_EXAMPLES`` sets the number of
    every fuzzing test (schemathesis's too) in every pass, for a deeper search.
    """
    given = os.environ.get("AUTHSVC_HOSTILE_EXAMPLES")
    if given:
        return int(given)
    beside_postgresql = "postgresql" in os.environ.get("AUTHSVC_TEST_PASSES", "").split(",")
    return 1 if BACKEND == "sqlite" and beside_postgresql else production


def in_one_pass(backend: str) -> pytest.MarkDecorator:
    """A module (``pytestmark``) or test run by ``backend``'s pass only, when the command runs both passes.

    For what does not depend on the pass's backend: a browser driving the pages (the API tests
    check the storage on both backends), the documentation (``./scripts/run``'s own service,
    whatever the pass) and a fresh interpreter given its own settings (``tests.helpers.python_run``,
    the lazy imports' probes: SQLite or none, no Redis). Run once, and on the pass that would
    otherwise finish first.
    """
    other = "sqlite" if backend == "postgresql" else "postgresql"
    both = {"postgresql", "sqlite"} <= set(os.environ.get("AUTHSVC_TEST_PASSES", "").split(","))
    return pytest.mark.skipif(BACKEND == other and both, reason=f"the {backend} pass runs it")


def redis_url() -> str | None:
    return os.environ.get("TEST_REDIS_URL") if BACKEND == "postgresql" else None


def clear_of_a_boundary(period: float, margin: float) -> None:
    """When the clock's current ``period`` (seconds since the epoch, in whole periods) ends within ``margin``
    seconds, wait for the next one to begin."""
    left = period - time.time() % period
    if left < margin:
        time.sleep(left + 0.05)


def clear_of_a_minute_boundary(margin: float = 5.0) -> None:
    """When the clock's minute ends within ``margin`` seconds, wait for the next one to begin.

    The rate limiter's sliding-window counter (limits) weighs the previous window's hits by how much of it
    is left and rounds the sum down: a request just after a window's boundary may pass one over the rate.
    A test that counts requests up to a small per-minute rate must run inside one window.
    """
    clear_of_a_boundary(60, margin)


def base_config() -> dict:
    return {
        "TESTING": True,
        "SECRET_KEY": "test-secret-key",
        "SQLALCHEMY_DATABASE_URI": DATABASE_URL,
        "REDIS_URL": redis_url(),
        # Cheap hashes keep the suite fast; the cost is a setting, not logic.
        "AUTHSVC_BCRYPT_ROUNDS": 4,
        # Tests sign in far faster than people do; tests/api/auth/test_limits.py sets
        # the rates it is about.
        "AUTHSVC_SIGNIN_RATE_LIMIT": "10000/minute",
        "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT": "10000/minute",
        "AUTHSVC_TOKEN_RATE_LIMIT": "10000/minute",
        "AUTHSVC_CLIENT_FAILURE_RATE_LIMIT": "10000/minute",
        "AUTHSVC_CLIENT_FAILURE_CLIENT_RATE_LIMIT": "10000/minute",
        "AUTHSVC_SSO_START_RATE_LIMIT": "10000/minute",
        "AUTHSVC_REGISTRATION_RATE_LIMIT": "10000/minute",
        # The peers the tests call are threads of this process, slow on a loaded machine (a SAML IdP's
        # first metadata loads XML schemas); the deadline's own tests set it to 1 s.
        "AUTHSVC_OUTBOUND_DEADLINE": 25,
        "AUTHSVC_SCIM_RATE_LIMIT": "10000/minute",
    }


DATABASE_URL = _database_url()


# The identity sequences of the schema (PostgreSQL), read at the first emptying.
_sequence_resets: list[str] | None = None


def empty_database(app) -> None:
    """Every table emptied and every id counting from 1 again, as in a new database.

    DELETE, not TRUNCATE: on tables this small TRUNCATE's new files cost 35-120 ms
    a test, DELETE 1-4 ms. On PostgreSQL the identity sequences are reset
    too (TRUNCATE's RESTART IDENTITY); on SQLite, the AUTOINCREMENT counters (``sqlite_sequence``).
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
            for statement in [*statements, "DELETE FROM sqlite_sequence"]:
                conn.exec_driver_sql(statement)


class HttpsClient(FlaskClient):
    """A test client that speaks https, as a deployment behind TLS does: OAuth 2.0 needs it."""

    def open(self, *args, **kwargs):
        kwargs.setdefault("base_url", f"https://{HOST}")
        return super().open(*args, **kwargs)


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
        specification's flow literally. tests/api/oauth/test_authorize.py covers the default of a new application."""
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


def stored_session(session_id: str) -> dict | None:
    """The session's record as the store holds it (its JSON), in an app context; None when it is gone."""
    from authsvc.auth import session_record
    from authsvc.core import store

    return store.get(session_record.KIND, session_id)


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
