"""High availability (docs/deployment.md): Redis through Sentinel, a multi-host DATABASE_URL, spent codes
that a Redis failover cannot revive, and a readiness answer that names the servers in use.

The Sentinel tests run a real primary, replica and Sentinels on loopback
(devtools.ha_cluster); the whole failover drill is tests/e2e/test_failover_drill.py.
"""

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from authsvc.core import security, store
from config.settings import ConfigError, database_url, from_environment
from devtools.ha_cluster import RedisSentinels, missing_binaries
from tests.helpers import BACKEND, DATABASE_URL, HttpsClient, get_code
from tests.helpers.admin_api import system_admin_key
from tests.helpers.outages import assert_unavailable, exchange, inspect, password_grant, signin

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ settings


@pytest.mark.parametrize(
    "value",
    ["127.0.0.1", "127.0.0.1:notaport", "127.0.0.1:26379,:26380", "127.0.0.1:0", "127.0.0.1:26379,,"],
)
def test_malformed_redis_sentinels_stop_the_service_from_starting(monkeypatch, value):
    monkeypatch.setenv("REDIS_SENTINELS", value)
    monkeypatch.setenv("REDIS_SENTINEL_SERVICE", "authsvc")
    with pytest.raises(ConfigError, match="REDIS_SENTINELS must be host:port"):
        from_environment()


def test_redis_sentinels_need_the_service_name(monkeypatch):
    monkeypatch.setenv("REDIS_SENTINELS", "10.0.0.1:26379")
    with pytest.raises(ConfigError, match="REDIS_SENTINEL_SERVICE"):
        from_environment()


def test_redis_sentinels_are_read_as_host_port_pairs(monkeypatch):
    monkeypatch.setenv("REDIS_SENTINELS", "10.0.0.1:26379, sentinel-b.internal:26380,[::1]:26381")
    monkeypatch.setenv("REDIS_SENTINEL_SERVICE", "authsvc")
    monkeypatch.setenv("REDIS_SENTINEL_PASSWORD", "s3ntinel")
    config = from_environment()
    assert config["REDIS_SENTINELS"] == [("10.0.0.1", 26379), ("sentinel-b.internal", 26380), ("::1", 26381)]
    assert (config["REDIS_SENTINEL_SERVICE"], config["REDIS_SENTINEL_PASSWORD"]) == ("authsvc", "s3ntinel")


def gunicorn_settings(**env) -> dict:
    code = "import json, runpy; s = runpy.run_path('config/gunicorn.py'); print(json.dumps({'workers': s['workers']}))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_gunicorn_runs_its_normal_workers_with_sentinels_and_no_redis_url():
    assert gunicorn_settings(REDIS_SENTINELS="10.0.0.1:26379", WEB_CONCURRENCY="3")["workers"] == 3
    assert gunicorn_settings(WEB_CONCURRENCY="3")["workers"] == 1


def test_a_multi_host_database_url_reaches_libpq_with_every_host():
    url = database_url("postgresql://u:p%40ss@db-a:5432,db-b:5433/authsvc?target_session_attrs=read-write")
    engine = create_engine(url)
    _, kwargs = engine.dialect.create_connect_args(engine.url)
    assert (kwargs["host"], kwargs["port"]) == ("db-a,db-b", "5432,5433")
    assert (kwargs["dbname"], kwargs["password"], kwargs["target_session_attrs"]) == ("authsvc", "p@ss", "read-write")
    assert database_url("postgres://u@one:5432/db") == "postgresql+psycopg://u@one:5432/db"


@pytest.mark.skipif(BACKEND != "postgresql", reason="needs the PostgreSQL backend")
def test_a_multi_host_database_url_skips_a_dead_host_and_readyz_names_the_server(make_app, setup, world):
    # The first host refuses (nothing listens there): libpq goes on to the next, for the ORM and inspect's pool.
    real = DATABASE_URL.replace("postgresql+psycopg://", "postgresql://")
    head, _, tail = real.partition("@")
    host, _, rest = tail.partition("/")
    dead = _closed_port()
    url = database_url(f"{head}@127.0.0.1:{dead},{host}/{rest}?target_session_attrs=read-write")
    app = make_app(SQLALCHEMY_DATABASE_URI=url)
    app.test_client_class = HttpsClient
    client = app.test_client()
    key = world.api_key(setup.person)
    assert inspect(client, headers={"X-API-Key": key}).status_code == 200
    assert signin(client).status_code == 202
    ready = client.get("/readyz", headers={"X-API-Key": system_admin_key(world, setup.domain)})
    assert ready.status_code == 200, ready.get_json()
    assert ready.get_json()["servers"]["database"] == host
    assert "p@ss" not in ready.get_data(as_text=True)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ spent codes


def test_a_spent_code_that_redis_lost_is_still_refused_and_revokes_its_tokens(app, setup):
    # A Redis failover may lose the claim of a code (replication is asynchronous): here the code's
    # record is put back and its spent marker removed, as a promoted replica would have them.
    app.test_client_class = HttpsClient
    client = app.test_client()
    client_id = setup.public_app.client_id
    assert signin(client).status_code == 202
    code = get_code(client, client_id)
    digest = security.digest(code)
    with app.app_context():
        before = store.client().get(f"authsvc:code:{digest}")
    first = exchange(client, client_id, code)
    assert first.status_code == 200, first.get_json()
    token = first.get_json()["access_token"]
    with app.app_context():
        store.client().set(f"authsvc:code:{digest}", before, ex=300)
        store.client().delete(f"authsvc:spent-code:{digest}")
    again = exchange(client, client_id, code)
    assert again.status_code == 400
    assert again.get_json()["error"] == "invalid_grant"
    # RFC 6749 4.1.2: the replay revokes what the code produced.
    assert inspect(client, headers={"Authorization": f"Bearer {token}"}).status_code == 401


# ------------------------------------------------------------------ Sentinel


@pytest.fixture(scope="module")
def sentinels():
    why = missing_binaries()
    if why:
        pytest.skip(f"Redis Sentinel cluster: {why}")
    workdir = Path(tempfile.mkdtemp(prefix="authsvc-sentinel-"))
    cluster = RedisSentinels(workdir, replicas=1, sentinels=2)
    try:
        with cluster.start():
            yield cluster
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class HungSentinel:
    """A Sentinel that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self):
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_with_sentinels_every_redis_use_goes_to_the_primary_they_name(make_app, setup, world, sentinels):
    app = make_app(
        REDIS_URL=None,
        REDIS_SENTINELS=[("127.0.0.1", port) for port in sentinels.sentinel_nodes],
        REDIS_SENTINEL_SERVICE="authsvc",
    )
    app.test_client_class = HttpsClient
    client = app.test_client()
    client_id = setup.public_app.client_id
    assert signin(client).status_code == 202
    code = get_code(client, client_id)
    assert exchange(client, client_id, code).status_code == 200
    # The session, the spent code and the rate limiter's counters are on the primary the Sentinels name.
    import redis

    primary = redis.Redis(port=sentinels.primary(), decode_responses=True)
    keys = set(primary.keys("authsvc:*"))
    assert any(key.startswith("authsvc:session:") for key in keys)
    assert f"authsvc:spent-code:{security.digest(code)}" in keys
    assert any("LIMITS" in key or "limits" in key for key in keys), sorted(keys)
    ready = client.get("/readyz", headers={"X-API-Key": system_admin_key(world, setup.domain)})
    assert ready.status_code == 200
    assert ready.get_json()["servers"]["redis"] == f"127.0.0.1:{sentinels.primary()}"


def test_redis_url_gives_the_database_and_password_beside_sentinels_and_readyz_hides_them(make_app, setup, sentinels):
    app = make_app(
        REDIS_URL="redis://ignored.invalid:1/5",
        REDIS_SENTINELS=[("127.0.0.1", port) for port in sentinels.sentinel_nodes],
        REDIS_SENTINEL_SERVICE="authsvc",
        REDIS_SENTINEL_PASSWORD=None,
    )
    app.test_client_class = HttpsClient
    client = app.test_client()
    assert signin(client).status_code == 202
    import redis

    primary = redis.Redis(port=sentinels.primary(), db=5, decode_responses=True)
    assert any(key.startswith("authsvc:session:") for key in primary.keys("authsvc:*"))
    assert "ignored.invalid" not in client.get("/readyz").get_data(as_text=True)


def test_a_hung_sentinel_costs_its_share_of_the_timeout_not_a_whole_one(make_app, setup, sentinels):
    hung = [HungSentinel() for _ in range(3)]
    try:
        app = make_app(
            REDIS_URL=None,
            REDIS_SENTINELS=[("127.0.0.1", h.port) for h in hung]
            + [("127.0.0.1", port) for port in sentinels.sentinel_nodes],
            REDIS_SENTINEL_SERVICE="authsvc",
            AUTHSVC_REDIS_TIMEOUT=1.0,
        )
        app.test_client_class = HttpsClient
        client = app.test_client()
        # Three hung Sentinels of five, each given a fifth of the second: the good ones are still reached.
        started = time.monotonic()
        assert signin(client).status_code == 202
        assert time.monotonic() - started < 2.5
        # Only hung ones: the whole search ends within the timeout, and the answer is 503 with Retry-After.
        app = make_app(
            REDIS_URL=None,
            REDIS_SENTINELS=[("127.0.0.1", h.port) for h in hung],
            REDIS_SENTINEL_SERVICE="authsvc",
            AUTHSVC_REDIS_TIMEOUT=0.6,
        )
        app.test_client_class = HttpsClient
        client = app.test_client()
        started = time.monotonic()
        assert_unavailable(signin(client))
        assert time.monotonic() - started < 1.5, "one hung Sentinel must not cost a full timeout each"
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.headers["Retry-After"]
        assert ready.get_json()["checks"]["redis"] == "unreachable"
    finally:
        for h in hung:
            h.close()


def test_the_sentinel_password_is_sent_to_sentinels_and_never_shown(make_app, setup, sentinels, caplog):
    # The Sentinels here have no password: AUTH with one fails, which readiness reports without the secret.
    app = make_app(
        REDIS_URL=None,
        REDIS_SENTINELS=[("127.0.0.1", port) for port in sentinels.sentinel_nodes],
        REDIS_SENTINEL_SERVICE="authsvc",
        REDIS_SENTINEL_PASSWORD="very-secret-sentinel-pw",
    )
    client = app.test_client()
    ready = client.get("/readyz")
    assert ready.status_code in (200, 503)
    assert "very-secret-sentinel-pw" not in ready.get_data(as_text=True)
    assert "very-secret-sentinel-pw" not in caplog.text


@pytest.mark.skipif(BACKEND != "postgresql", reason="needs the PostgreSQL backend")
def test_a_primary_that_became_read_only_costs_one_503_then_the_pool_reconnects(make_app, setup):
    # One pooled connection, which now leads to a server that refuses writes (as a demoted primary does).
    app = make_app(SQLALCHEMY_ENGINE_OPTIONS={"pool_size": 1, "max_overflow": 0, "pool_recycle": 1800})
    app.test_client_class = HttpsClient
    client = app.test_client()
    with app.app_context():
        from sqlalchemy import text

        from authsvc.core.database import db

        db.session.execute(text("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"))
        db.session.commit()
    client_id = setup.public_app.client_id
    assert_unavailable(password_grant(client, client_id))
    # The pool was dropped: the next connection takes writes again.
    assert password_grant(client, client_id).status_code == 200


@pytest.mark.skipif(BACKEND != "postgresql", reason="needs the PostgreSQL backend")
def test_a_server_lost_after_the_answer_was_made_keeps_the_answer(make_app, setup):
    # The failover drill's one 500: the primary died after a sign-in's answer was made, and the
    # rollback that ends the request's session failed outside every error handler.
    import psycopg
    from sqlalchemy import text

    from authsvc.core.database import db

    app = make_app(SQLALCHEMY_ENGINE_OPTIONS={"pool_size": 1, "max_overflow": 0})
    real = DATABASE_URL.replace("postgresql+psycopg://", "postgresql://")

    def answer_then_lose_the_server() -> str:
        pid = db.session.execute(text("SELECT pg_backend_pid()")).scalar()  # a transaction is open
        with psycopg.connect(real, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return "answered"

    app.add_url_rule("/test/lose-the-server", view_func=answer_then_lose_the_server)
    app.test_client_class = HttpsClient
    client = app.test_client()
    answer = client.get("/test/lose-the-server")
    assert answer.status_code == 200
    assert answer.get_data(as_text=True) == "answered"
    # The lost connection was not returned to the pool of one: the next request reconnects.
    assert password_grant(client, setup.public_app.client_id).status_code == 200
