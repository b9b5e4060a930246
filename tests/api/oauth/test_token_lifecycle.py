"""Lifetimes (global and per application), refresh idle expiry, purge, and index-only lookups."""

import json
import threading
import time

import pytest
from psycopg import sql
from sqlalchemy import event, func, insert, select, text

from authsvc.core import security
from authsvc.core.database import db, now
from authsvc.core.models import Application, Token
from authsvc.core.readers import pool as readers
from authsvc.tokens import presented
from tests.helpers import HOST, PASSWORD, headers, in_one_pass

INSPECT = "/api/engine/v2/api_keys/inspect"


def password_grant(client, client_id):
    body = {"grant_type": "password", "username": "service@example.com", "password": PASSWORD, "client_id": client_id}
    return client.post("/auth/oauth/token", json=body, headers=headers(), base_url=f"https://{HOST}")


def refresh(client, client_id, refresh_token):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    return client.post("/auth/oauth/token", data=data, headers=headers(), base_url=f"https://{HOST}")


def test_an_applications_own_lifetimes_win_over_the_global_ones(make_app, setup, world):
    app = make_app(AUTHSVC_ACCESS_TOKEN_TTL=600, AUTHSVC_REFRESH_TOKEN_TTL=3600, AUTHSVC_REFRESH_IDLE_TTL=0)
    world.update(Application, setup.public_app.id, access_token_ttl=120, refresh_token_ttl=900)
    own = password_grant(app.test_client(), setup.public_app.client_id).get_json()
    assert own["expires_in"] == 120
    world.update(Application, setup.public_app.id, access_token_ttl=None, refresh_token_ttl=None)
    default = password_grant(app.test_client(), setup.public_app.client_id).get_json()
    assert default["expires_in"] == 600
    first, second = world.query(select(Token).order_by(Token.id))
    assert first.refresh_expires_at - first.issued_at == 900
    assert second.refresh_expires_at - second.issued_at == 3600


def test_a_refresh_token_expires_after_the_idle_time(make_app, setup, world):
    app = make_app(AUTHSVC_REFRESH_TOKEN_TTL=3600, AUTHSVC_REFRESH_IDLE_TTL=60)
    body = password_grant(app.test_client(), setup.public_app.client_id).get_json()
    [row] = world.query(select(Token))
    assert row.refresh_expires_at - row.issued_at == 60
    assert row.grant_expires_at - row.issued_at == 3600
    # Unused for longer than the idle time:
    world.update(Token, row.id, issued_at=row.issued_at - 61, refresh_expires_at=row.refresh_expires_at - 61)
    response = refresh(app.test_client(), setup.public_app.client_id, body["refresh_token"])
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_grant"


def test_rotation_keeps_the_grants_end(make_app, setup, world):
    app = make_app(AUTHSVC_REFRESH_TOKEN_TTL=3600, AUTHSVC_REFRESH_IDLE_TTL=600)
    body = password_grant(app.test_client(), setup.public_app.client_id).get_json()
    [first] = world.query(select(Token))
    # Near the grant's end, the next refresh token lives only until it, not a new idle time.
    world.update(Token, first.id, grant_expires_at=now() + 100)
    rotated = refresh(app.test_client(), setup.public_app.client_id, body["refresh_token"])
    assert rotated.status_code == 200
    second = world.query(select(Token).where(Token.id != first.id))[0]
    assert second.grant_expires_at == now() + 100 or abs(second.grant_expires_at - (now() + 100)) <= 2
    assert second.refresh_expires_at == second.grant_expires_at
    assert second.family == first.family


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_lifetimes_are_read_from_the_environment():
    from tests.helpers.python_run import run_python

    result = run_python(
        "from authsvc import create_app; c = create_app().config; "
        "print(c['AUTHSVC_REFRESH_TOKEN_TTL'], c['AUTHSVC_REFRESH_IDLE_TTL'])",
        AUTHSVC_REFRESH_TOKEN_TTL="86400",
        AUTHSVC_REFRESH_IDLE_TTL="3600",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["86400", "3600"]


# Purge


def add_token(world, *, issued_ago=0, expires_in=3600, refresh_in=None, revoked_ago=None, app_id, user_id):
    issued = now() - issued_ago
    refresh_expires_at = issued + refresh_in if refresh_in is not None else None
    revoked_at = now() - revoked_ago if revoked_ago is not None else None
    purgeable = revoked_at if revoked_at is not None else max(issued + expires_in, refresh_expires_at or 0)
    return world.save(
        Token(
            application_id=app_id,
            user_id=user_id,
            access_token_digest=security.digest(security.new_secret()),
            refresh_token_digest=security.digest(security.new_secret()) if refresh_in is not None else None,
            family=security.new_secret(),
            grant_type="password",
            scope="public",
            issued_at=issued,
            expires_in=expires_in,
            refresh_expires_at=refresh_expires_at,
            grant_expires_at=refresh_expires_at,
            revoked_at=revoked_at,
            purgeable_at=purgeable,
        )
    ).id


def purge(runner, *args):
    result = runner.invoke(args=["tokens", "purge", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_purge_deletes_expired_and_revoked_tokens_and_keeps_live_ones(runner, setup, world):
    ids = {"app_id": setup.public_app.id, "user_id": setup.service.id}
    live = add_token(world, **ids)
    refreshable = add_token(world, issued_ago=7200, expires_in=3600, refresh_in=86400, **ids)
    expired = add_token(world, issued_ago=7200, expires_in=3600, **ids)
    both_expired = add_token(world, issued_ago=90000, expires_in=3600, refresh_in=86400, **ids)
    revoked = add_token(world, revoked_ago=10, **ids)
    out = purge(runner)
    assert out["deleted"] == 3
    assert out["expired"] == 2
    assert out["revoked"] == 1
    remaining = {t.id for t in world.query(select(Token))}
    assert remaining == {live, refreshable}
    assert not remaining & {expired, both_expired, revoked}


def test_purge_older_than_keeps_recently_dead_tokens(runner, setup, world):
    ids = {"app_id": setup.public_app.id, "user_id": setup.service.id}
    recent = add_token(world, issued_ago=7200, expires_in=3600, **ids)
    old = add_token(world, issued_ago=10 * 86400, expires_in=3600, **ids)
    recently_revoked = add_token(world, revoked_ago=86400, **ids)
    long_revoked = add_token(world, revoked_ago=3 * 86400, **ids)
    out = purge(runner, "--older-than", "2")
    assert out["deleted"] == 2
    assert {t.id for t in world.query(select(Token))} == {recent, recently_revoked}
    assert old and long_revoked


def test_purge_works_in_batches(runner, setup, world):
    ids = {"app_id": setup.public_app.id, "user_id": setup.service.id}
    for _ in range(7):
        add_token(world, issued_ago=7200, expires_in=60, **ids)
    out = purge(runner, "--batch-size", "3")
    assert out["deleted"] == 7
    assert out["batches"] == 3
    assert world.query(select(func.count()).select_from(Token)) == [0]


def test_purge_runs_beside_live_traffic(make_app, runner, setup, world):
    """Tokens are issued, refreshed and inspected while a purge deletes thousands of dead rows."""
    ids = {"app_id": setup.public_app.id, "user_id": setup.service.id}
    with world.app.app_context():
        dead_at = now() - 7200
        db.session.execute(
            insert(Token),
            [
                {
                    "application_id": ids["app_id"],
                    "user_id": ids["user_id"],
                    "access_token_digest": security.digest(f"dead-{i}"),
                    "family": f"dead-{i}",
                    "grant_type": "password",
                    "scope": "public",
                    "issued_at": dead_at,
                    "expires_in": 60,
                    "purgeable_at": dead_at + 60,
                }
                for i in range(3000)
            ],
        )
        db.session.commit()
    traffic_app = make_app()
    failures: list[str] = []
    stop = threading.Event()

    def traffic():
        client = traffic_app.test_client()
        while not stop.is_set():
            body = password_grant(client, setup.public_app.client_id).get_json()
            rotated = refresh(client, setup.public_app.client_id, body["refresh_token"])
            if rotated.status_code != 200:
                failures.append(f"refresh {rotated.status_code} {rotated.get_data(as_text=True)}")
                continue
            seen = client.get(
                INSPECT,
                headers=headers(Authorization=f"Bearer {rotated.get_json()['access_token']}"),
                base_url=f"https://{HOST}",
            )
            if seen.status_code != 200:
                failures.append(f"inspect {seen.status_code}")

    thread = threading.Thread(target=traffic)
    thread.start()
    try:
        time.sleep(0.2)
        out = purge(runner, "--batch-size", "200")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert failures == []
    assert out["deleted"] >= 3000
    live = world.query(select(func.count()).select_from(Token).where(Token.purgeable_at >= now()))
    assert live[0] > 0


def test_purge_with_nothing_to_do_says_so(runner, setup):
    out = purge(runner)
    assert out["deleted"] == 0
    assert out["batches"] == 0


def test_purge_refuses_a_negative_age(runner, setup):
    result = runner.invoke(args=["tokens", "purge", "--older-than", "-1"])
    assert result.exit_code != 0


# Index-only lookups as the table grows (PostgreSQL's planner).


def plans_of_requests(app, client, requests) -> list[str]:
    """EXPLAIN every SELECT on the token table that ``requests`` make."""
    statements = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT") and "FROM token" in statement:
            statements.append((statement, parameters))

    with app.app_context():
        engine = db.engine
        event.listen(engine, "before_cursor_execute", capture)
        try:
            for send in requests:
                send(client)
        finally:
            event.remove(engine, "before_cursor_execute", capture)
        plans = []
        with engine.connect() as conn:
            for statement, parameters in statements:
                rows = conn.exec_driver_sql("EXPLAIN " + statement, parameters).all()
                plans.append("\n".join(row[0] for row in rows))
    return plans


@pytest.mark.postgresql
def test_token_lookups_use_the_digest_indexes_on_a_large_table(app, client, setup, world):
    ids = {"app_id": setup.public_app.id, "user_id": setup.service.id}
    with app.app_context():
        issued = now()
        db.session.execute(
            insert(Token),
            [
                {
                    "application_id": ids["app_id"],
                    "user_id": ids["user_id"],
                    "access_token_digest": security.digest(f"access-{i}"),
                    "refresh_token_digest": security.digest(f"refresh-{i}"),
                    "family": security.digest(f"family-{i}"),
                    "grant_type": "password",
                    "scope": "public",
                    "issued_at": issued,
                    "expires_in": 3600,
                    "refresh_expires_at": issued + 86400,
                    "grant_expires_at": issued + 86400,
                    "purgeable_at": issued + 86400 + i,
                }
                for i in range(20000)
            ],
        )
        db.session.commit()
        # As autovacuum would leave it: statistics, and the visibility map that index-only scans read.
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM (ANALYZE) token"))
    body = password_grant(client, setup.public_app.client_id).get_json()
    bearer = {"Authorization": f"Bearer {body['access_token']}"}
    plans = plans_of_requests(
        app,
        client,
        [
            lambda c: c.post(
                "/auth/oauth/revoke",
                data={"token": "unknown", "client_id": setup.public_app.client_id},
                headers=headers(),
            ),
            lambda c: refresh(c, setup.public_app.client_id, body["refresh_token"]),
        ],
    )
    assert len(plans) >= 3, plans
    for plan in plans:
        assert "Seq Scan on token" not in plan, plan
        assert "Scan using ix_token_access_token_digest" in plan or (
            "Index Scan using ix_token_refresh_token_digest" in plan
        ), plan
    # Inspect runs its lookup prepared, on a connection of its own, outside
    # SQLAlchemy's execution events: the plan of the statement it prepares is
    # read from PostgreSQL itself.
    assert client.get(INSPECT, headers=headers(**bearer)).status_code == 200
    # Both of its statements: with a default domain configured, and without one (the tests' setting).
    for claims in (presented.TOKEN_CLAIMS, presented.TOKEN_CLAIMS_BY_HOST):
        with app.app_context():
            prepared = readers._Prepared.of(claims, db.engine.dialect)
            connection = db.engine.raw_connection()
            try:
                cursor = connection.cursor()
                # The reader keeps the statement as the bytes libpq is sent (authsvc.core.readers.roundtrip).
                statement_text = prepared.sql.decode()
                cursor.execute(sql.SQL("PREPARE inspect AS {}").format(sql.SQL(statement_text)))
                # The plan a reader runs after the first few executions: the generic one.
                cursor.execute("SET plan_cache_mode = force_generic_plan")
                # Arguments in the statement's order (digest, host, default host if it has one); as
                # literals, since EXPLAIN takes no bound parameters.
                values = {"digest": security.digest(body["access_token"]), "host": HOST, "default_host": None}
                arguments = sql.SQL(", ").join(sql.Literal(values[name]) for name in prepared.parameters)
                cursor.execute(sql.SQL("EXPLAIN EXECUTE inspect({})").format(arguments))
                inspect_plan = "\n".join(row[0] for row in cursor.fetchall())
            finally:
                connection.invalidate()  # its prepared statement and setting go with it
        assert "access_token_digest" in statement_text
        # Inspect reads only what the covering index holds: the token's heap is not visited.
        assert "Index Only Scan using ix_token_access_token_digest" in inspect_plan, inspect_plan
