"""A hung database costs a request one budget (AUTHSVC_DATABASE_TIMEOUT), not a statement timeout per
statement; and what inspect asks of PostgreSQL: one statement.

A loopback proxy (tests/fakes/proxy.py) in front of the real server freezes the
connections (open, nothing answered) or counts the messages sent through it.
"""

import functools
import time
from urllib.parse import urlsplit

import bcrypt
import pytest
from sqlalchemy import event

from authsvc.core.budget import declared_paths
from authsvc.core.database import db
from tests.fakes.proxy import TcpProxy
from tests.helpers import BACKEND, DATABASE_URL, PASSWORD, HttpsClient, get_code, headers
from tests.helpers.outages import assert_unavailable, authorize, exchange, inspect, password_grant, signin, timed

BUDGET = 1  # seconds of database per request; the statement timeout stays at its default, 10 s
# The answer comes within the budget, plus the watchdog's tick and libpq's least connect timeout (2 s).
BOUND = BUDGET + 2


@pytest.fixture
def database_proxy():
    url = urlsplit(DATABASE_URL.replace("postgresql+psycopg://", "postgresql://"))
    proxy = TcpProxy(url.hostname, url.port or 5432, count_postgres=True)
    yield proxy
    proxy.close()


def proxied_url(proxy: TcpProxy) -> str:
    url = proxy.url_for(DATABASE_URL)
    # Unencrypted, so that the proxy can read the protocol's messages.
    return url + ("&" if "?" in url else "?") + "sslmode=disable"


@pytest.mark.postgresql
def test_a_hung_database_answers_503_within_one_database_budget_per_request(make_app, setup, world, database_proxy):
    proxy = database_proxy
    app = make_app(SQLALCHEMY_DATABASE_URI=proxied_url(proxy), AUTHSVC_DATABASE_TIMEOUT=BUDGET)
    app.test_client_class = HttpsClient
    client = app.test_client()
    client_id = setup.public_app.client_id
    bearer = password_grant(client, client_id).get_json()["access_token"]
    api_key = world.api_key(setup.person)
    assert inspect(client, headers={"Authorization": f"Bearer {bearer}"}).status_code == 200
    assert signin(client).status_code == 202
    code = get_code(client, client_id)

    proxy.freeze()
    calls = {
        # On connections open when the server hung (inspect's own, the pool's), then on new ones.
        "sign-in": lambda: signin(client),
        "inspect, bearer header": lambda: inspect(client, headers={"Authorization": f"Bearer {bearer}"}),
        "inspect, API key in the query": lambda: inspect(client, query={"api-key": api_key}),
        "token, password grant": lambda: password_grant(client, client_id),
        "token, code exchange": lambda: exchange(client, client_id, code),
        "authorise": lambda: authorize(client, client_id),
        "userinfo": lambda: client.get("/auth/oauth/userinfo", headers=headers(Authorization=f"Bearer {bearer}")),
        "inspect, API key header": lambda: inspect(client, headers={"X-API-Key": api_key}),
    }
    for name, call in calls.items():
        response, took = timed(call)
        assert_unavailable(response)
        assert took < BOUND, f"{name}: {took:.1f} s"

    proxy.thaw()
    # Recovery: inspect's pool reconnects after a short backoff; bounded, as in test_failures_database.
    deadline = time.monotonic() + 10
    while inspect(client, headers={"Authorization": f"Bearer {bearer}"}).status_code != 200:
        assert time.monotonic() < deadline, "inspect did not recover within 10 s of the database's return"
        time.sleep(0.2)
    assert signin(client).status_code == 202
    assert password_grant(client, client_id).status_code == 200


@pytest.mark.postgresql
def test_the_budget_counts_time_on_the_database_only_not_the_whole_request(make_app, setup, world):
    """A sign-in whose password check (bcrypt) takes longer than the whole budget still succeeds."""
    from authsvc.core.models import User

    app = make_app(AUTHSVC_DATABASE_TIMEOUT=0.5)
    app.test_client_class = HttpsClient
    # A costly hash: checking it takes well over the 0.5 s budget on any machine.
    slow_hash = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(14)).decode()
    world.update(User, setup.person.id, password_hash=slow_hash)
    started = time.monotonic()
    response = signin(app.test_client())
    assert response.status_code == 202, response.get_json()
    assert time.monotonic() - started > 0.5


def test_the_database_budget_must_be_a_positive_number_of_seconds(monkeypatch):
    from config import settings

    for value in ("0", "-1", "nan"):
        monkeypatch.setenv("AUTHSVC_DATABASE_TIMEOUT", value)
        with pytest.raises(settings.ConfigError, match="AUTHSVC_DATABASE_TIMEOUT must be a positive"):
            settings.from_environment()
    monkeypatch.setenv("AUTHSVC_DATABASE_TIMEOUT", "soon")
    with pytest.raises(settings.ConfigError, match="AUTHSVC_DATABASE_TIMEOUT must be a number"):
        settings.from_environment()
    monkeypatch.setenv("AUTHSVC_DATABASE_TIMEOUT", "0.5")
    assert settings.from_environment()["AUTHSVC_DATABASE_TIMEOUT"] == 0.5


@pytest.mark.postgresql
def test_inspect_runs_one_sql_statement_per_request(make_app, client, setup, world, database_proxy):
    """Counted on the wire (PostgreSQL's protocol, through the proxy): whatever path answers inspect."""
    bearer = password_grant(client, setup.public_app.client_id).get_json()["access_token"]
    # Used a moment ago: no last-use write is due (authsvc.api.credentials.LAST_USED_RESOLUTION).
    api_key = world.api_key(setup.person, last_used_at=int(time.time()))
    proxy = database_proxy
    app = make_app(SQLALCHEMY_DATABASE_URI=proxied_url(proxy))
    app.test_client_class = HttpsClient
    proxied = app.test_client()
    requests = {
        "bearer header": {"headers": {"Authorization": f"Bearer {bearer}"}},
        "API key header": {"headers": {"X-API-Key": api_key}},
        "bearer in the query": {"query": {"bearer_token": bearer}},
        "API key in the query": {"query": {"api-key": api_key}},
    }
    for _ in range(2):  # the first time (preparing the statement), and again
        for name, where in requests.items():
            before = proxy.postgres_statements()
            response = inspect(proxied, **where)
            assert response.status_code == 200, (name, response.get_json())
            assert proxy.postgres_statements() - before == 1, name


@pytest.mark.skipif(BACKEND != "sqlite", reason="PostgreSQL: counted on the wire above")
def test_inspect_on_sqlite_runs_one_sql_statement_per_request(app, client, setup, world):
    """The embedded database answers inspect through Flask: its statements are SQLAlchemy's, counted by its event."""
    bearer = password_grant(client, setup.public_app.client_id).get_json()["access_token"]
    api_key = world.api_key(setup.person, last_used_at=int(time.time()))
    statements: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        statements.append(statement)

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        for where in (
            {"headers": {"Authorization": f"Bearer {bearer}"}},
            {"headers": {"X-API-Key": api_key}},
            {"query": {"bearer_token": bearer}},
            {"query": {"api-key": api_key}},
        ):
            statements.clear()
            assert inspect(client, **where).status_code == 200
            assert len(statements) == 1, (where, statements)
    finally:
        event.remove(engine, "before_cursor_execute", count)


@functools.cache
def _declared_paths():
    from authsvc import create_app
    from tests.helpers import base_config

    return declared_paths(create_app(base_config()))


@pytest.mark.parametrize(
    ("path", "is_budgeted"),
    [
        ("/api/engine/v2/api_keys/inspect", True),
        ("/api/engine/v2/users/resource_token", True),
        ("/auth/signin", True),
        ("/auth/oauth/token", True),
        ("/scim/v2/Users", True),
        ("/api/engine/v2/users", False),
        ("/auth/admin/users", False),
        ("/readyz", False),
    ],
)
def test_the_requests_api_servers_wait_on_have_the_budget_and_listings_keep_the_statement_timeout(path, is_budgeted):
    """The views declare it (``@unbudgeted``, authsvc.core.policy); the paths are decided before any routing."""
    budgeted = _declared_paths()
    assert budgeted(path) is is_budgeted
