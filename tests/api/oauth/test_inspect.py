"""docs/platform.md#inspect: presenting a bearer token or an API key to the inspect endpoint."""

import json
import os
import re
import time

import pytest
from sqlalchemy import select, text

from authsvc.core.database import db, now
from authsvc.core.models import ApiKey, Token, User
from tests.helpers import HOST, OTHER_HOST, PASSWORD, headers
from tests.helpers.inspect_fast_path import INSPECT, through_fast_path


@pytest.fixture
def token(client, setup):
    body = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
            "scope": "public mqtt.read",
        },
        headers=headers(),
    ).get_json()
    return body["access_token"]


def present(client, where, value, name="bearer_token"):
    if where == "header":
        return client.get(INSPECT, headers=headers(Authorization=f"Bearer {value}"))
    if where == "x-api-key":
        return client.get(INSPECT, headers=headers(**{"X-API-Key": value}))
    if where == "query":
        return client.get(INSPECT, query_string={name: value}, headers=headers())
    client.set_cookie(name, value, domain=HOST)
    return client.get(INSPECT, headers=headers())


@pytest.mark.parametrize("where", ["header", "query", "cookie"])
def test_a_bearer_token_is_accepted_in_each_place(client, setup, token, where):
    response = present(client, where, token)
    assert response.status_code == 200
    claims = response.get_json()
    assert claims["sub"] == str(setup.service.id)
    assert claims["aud"] == HOST
    assert claims["scope"] == ["public", "mqtt.read"]
    assert claims["client_id"] == setup.public_app.client_id
    assert claims["u"] == {"n": "Service", "e": "service@example.com", "p": 0, "r": []}
    assert claims["exp"] - claims["iat"] == 7200
    assert claims["iss"] == f"https://{HOST}"


@pytest.mark.parametrize("where", ["x-api-key", "query", "cookie"])
def test_an_api_key_is_accepted_in_each_place(client, setup, world, where):
    key = world.api_key(setup.person, scopes="public")
    response = present(client, where, key, name="api-key")
    assert response.status_code == 200
    claims = response.get_json()
    assert claims["api_key"] == key.split(".")[0]
    assert claims["sub"] == str(setup.person.id)
    assert claims["scope"] == ["public"]
    assert "client_id" not in claims


def test_permission_bits_and_groups_are_in_the_claims(client, setup, world):
    world.update(User, setup.person.id, admin=True, support=True, groups=["facilities"])
    key = world.api_key(setup.person, permission="admin")
    claims = present(client, "x-api-key", key).get_json()
    assert claims["u"]["p"] == 3
    assert claims["u"]["r"] == ["facilities"]


@pytest.mark.parametrize("permission,bits", [("user", 0), ("support", 1), ("admin", 3)])
def test_an_api_keys_permission_level_caps_the_users_bits(client, setup, world, permission, bits):
    world.update(User, setup.person.id, admin=True, support=True)
    key = world.api_key(setup.person, permission=permission)
    assert present(client, "x-api-key", key).get_json()["u"]["p"] == bits


def test_an_admin_key_of_a_user_who_is_no_longer_admin_carries_no_admin_bit(client, setup, world):
    world.update(User, setup.person.id, admin=True)
    key = world.api_key(setup.person, permission="admin")
    world.update(User, setup.person.id, admin=False)
    assert present(client, "x-api-key", key).get_json()["u"]["p"] == 0


def assert_invalid_token(response):
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


@pytest.mark.parametrize("value", ["unknown-token", "", "Bearer", "x" * 5000, "\u00e9t\u00e9"])
def test_unknown_or_malformed_tokens_are_401(client, setup, value):
    response = client.get(INSPECT, query_string={"bearer_token": value or "  "}, headers=headers())
    assert_invalid_token(response)


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer ", "Token abc"])
def test_malformed_authorization_headers_are_401(client, setup, header):
    assert_invalid_token(client.get(INSPECT, headers=headers(Authorization=header)))


def test_no_credential_is_401_with_a_bare_challenge(client, setup):
    """RFC 6750 3.1: no error code without a credential; RFC 9728 5.1: where the API's metadata is."""
    response = client.get(INSPECT, headers=headers())
    assert response.status_code == 401
    metadata = "https://auth.example.com/.well-known/oauth-protected-resource/api/engine/v2"
    assert response.headers["WWW-Authenticate"] == f'Bearer realm="authsvc", resource_metadata="{metadata}"'


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/api/engine/v2/domains", True),  # the admin API
        ("/api/engine/v2/me", True),  # the signed-in person's own
        ("/auth/oauth/userinfo", False),  # OpenID Connect's, not the API's
        ("/scim/v2/Users", False),  # SCIM's own resource
    ],
)
def test_every_401_of_the_api_names_its_metadata_and_no_other_does(client, setup, path, named):
    """RFC 9728 5.1: the API's metadata is the API's, whichever of its parts answers; elsewhere a challenge
    naming it would send a client to the wrong resource's description."""
    response = client.get(path, headers=headers())
    assert response.status_code == 401
    metadata = "https://auth.example.com/.well-known/oauth-protected-resource/api/engine/v2"
    named_challenge = f'Bearer realm="authsvc", resource_metadata="{metadata}"'
    assert response.headers["WWW-Authenticate"] == (named_challenge if named else 'Bearer realm="authsvc"')


def test_revoked_token_is_401(client, setup, world, token):
    [row] = world.query(select(Token))
    world.update(Token, row.id, revoked_at=now())
    assert_invalid_token(present(client, "header", token))


def test_expired_token_is_401(client, setup, world, token):
    [row] = world.query(select(Token))
    world.update(Token, row.id, issued_at=now() - 7201)
    assert_invalid_token(present(client, "header", token))


def test_token_of_a_disabled_user_is_401(client, setup, world, token):
    world.update(User, setup.service.id, disabled=True)
    assert_invalid_token(present(client, "header", token))


def test_token_from_another_domain_is_401(client, setup, world, token):
    world.domain(OTHER_HOST)
    response = client.get(INSPECT, headers=headers(OTHER_HOST, Authorization=f"Bearer {token}"))
    assert_invalid_token(response)


@pytest.mark.parametrize("change", [{"revoked_at": 1}, {"expires_at": 1}])
def test_revoked_or_expired_api_key_is_401(client, setup, world, change):
    key = world.api_key(setup.person)
    world.update(ApiKey, key.split(".")[0], **change)
    assert_invalid_token(present(client, "x-api-key", key))


@pytest.mark.parametrize(
    "mangle",
    [
        lambda k: k + "x",
        lambda k: k.split(".")[0],
        lambda k: "nokey." + k.split(".")[1],
        lambda k: "." + k,
        lambda k: "a" * 40 + ".b",
    ],
)
def test_wrong_api_keys_are_401(client, setup, world, mangle):
    key = world.api_key(setup.person)
    assert_invalid_token(present(client, "x-api-key", mangle(key)))


def test_api_key_of_another_domain_is_401(client, setup, world):
    other = world.domain(OTHER_HOST)
    elsewhere = world.user(other, "elsewhere@example.com")
    key = world.api_key(elsewhere)
    assert_invalid_token(present(client, "x-api-key", key))
    assert client.get(INSPECT, headers=headers(OTHER_HOST, **{"X-API-Key": key})).status_code == 200


def test_the_answer_is_not_cached(client, setup, token):
    assert present(client, "header", token).headers["Cache-Control"] == "no-store"


# The WSGI fast path (authsvc.fastpath), PostgreSQL only. The tests above go
# through it wherever the credential is in a header; these show what it
# answers itself and what it leaves to Flask.


@pytest.mark.postgresql
def test_the_fast_path_answers_a_valid_header_credential_itself(app, setup, world, token):
    key = world.api_key(setup.person, scopes="public")
    with app.app_context():
        # A key used just now: no last-use write is due, so no reason to pass it on.
        world.update(ApiKey, key.split(".")[0], last_used_at=now())
    for credential in ({"Authorization": f"Bearer {token}"}, {"X-API-Key": key}):
        response = through_fast_path(app, headers=credential)
        assert response.status_code == 200
        assert response.get_json()["aud"] == HOST


@pytest.mark.postgresql
@pytest.mark.parametrize(
    "request_",
    [
        {"query_string": {"bearer_token": "T"}},  # the query and the cookie are Flask's
        {"headers": {"Cookie": "bearer_token=T"}},
        {"headers": {"Authorization": "Bearer T", "X-Request-Id": "r"}, "query_string": {"x": "1"}},
        {"headers": {"Authorization": "Bearer unknown"}},  # every miss: Flask finds the right error
        {"headers": {"Authorization": "Basic abc"}},
        {"headers": {"Authorization": "Bearer T", "Host": "unknown.example.com"}},
        {"headers": {"X-API-Key": "nokey.secret"}},
        {"headers": {"X-API-Key": "K", "Cookie": "bearer_token=T"}},  # Flask takes the cookie's token first
        {},
    ],
)
def test_the_fast_path_leaves_everything_else_to_flask(app, setup, world, token, request_):
    key = world.api_key(setup.person, scopes="public", last_used_at=now())
    values = {"T": token, "K": key, "bearer_token=T": f"bearer_token={token}"}
    request_ = {
        name: {k: values.get(v, v) for k, v in value.items()} if isinstance(value, dict) else value
        for name, value in request_.items()
    }
    response = through_fast_path(app, **request_)
    assert (response.status_code, response.get_data()) == (418, b"reached flask")


@pytest.mark.postgresql
def test_the_fast_path_leaves_a_due_last_use_write_to_flask(app, client, setup, world):
    key = world.api_key(setup.person, scopes="public")  # never used: its first use is recorded
    assert through_fast_path(app, headers={"X-API-Key": key}).status_code == 418
    assert present(client, "x-api-key", key).status_code == 200
    assert world.query(select(ApiKey.last_used_at).where(ApiKey.id == key.split(".")[0]))[0] is not None
    assert through_fast_path(app, headers={"X-API-Key": key}).status_code == 200


def test_the_header_and_the_query_string_get_the_same_answer(client, setup, token):
    """On PostgreSQL the header goes through the fast path and the query through Flask."""
    by_header = present(client, "header", token)
    by_query = present(client, "query", token)
    assert by_header.status_code == by_query.status_code == 200
    assert by_header.get_data() == by_query.get_data()

    def comparable(response):
        return sorted((k, v) for k, v in response.headers.items() if k != "X-Request-Id")

    assert comparable(by_header) == comparable(by_query)
    assert by_header.headers["Strict-Transport-Security"].startswith("max-age=")


# Inspect's lookups run on connections of their own (authsvc.database's
# readers), outside SQLAlchemy's pool.


def lookup_backends(app) -> list[int]:
    """Server processes of the test database whose last statement was inspect's token lookup."""
    query = text(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND pid <> pg_backend_pid() AND query LIKE '%FROM token JOIN application%' ORDER BY pid"
    )
    with app.app_context(), db.engine.connect() as connection:
        return list(connection.execute(query).scalars())


def eventually(condition, seconds=3.0):
    """``condition()`` becomes true within ``seconds`` (a server process ends a moment after its client)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.postgresql
def test_inspect_reads_on_one_connection_which_closes_with_the_engine(app, client, setup, token):
    for _ in range(20):
        assert present(client, "header", token).status_code == 200
        assert present(client, "query", token).status_code == 200
    assert len(lookup_backends(app)) == 1
    with app.app_context():
        db.engine.dispose()
    assert eventually(lambda: lookup_backends(app) == [])
    assert present(client, "header", token).status_code == 200


@pytest.mark.postgresql
def test_a_forked_process_inspects_on_its_own_connection_and_leaves_the_parents_alone(app, client, setup, token):
    assert present(client, "header", token).status_code == 200
    [parents] = lookup_backends(app)
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe and its exit status
        try:
            with app.app_context():
                db.engine.dispose(close=False)  # as SQLAlchemy advises after a fork
            status = present(client, "header", token).status_code
            os.write(writing, json.dumps([status, lookup_backends(app)]).encode())
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(writing)
    with os.fdopen(reading) as pipe:
        status, seen_by_child = json.loads(pipe.read() or "[0, []]")
    _, exit_status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(exit_status) == 0
    assert status == 200
    # The child read on a connection of its own, beside the parent's.
    assert len(seen_by_child) == 2 and parents in seen_by_child
    # And the parent's connection is the same one, still open.
    assert present(client, "header", token).status_code == 200
    assert eventually(lambda: lookup_backends(app) == [parents])


@pytest.mark.postgresql
def test_inspect_plans_its_lookup_by_nested_loops_however_skewed_the_tokens(app, client, setup, token):
    """Most tokens one user's (a service account's): the lookup still visits one row of each table.

    PostgreSQL's generic plan for such statistics joined the user by a merge join that walks the
    user index from its start (every user before the token's); the readers' sessions rule that out.
    """
    from psycopg import sql

    from authsvc.core import security
    from authsvc.core.readers.pool import READERS, _Prepared
    from authsvc.tokens import presented

    # As the benchmark's data: a thousand users, and thousands of tokens all of the one user.
    with app.app_context():
        db.session.execute(
            text(
                'INSERT INTO "user" (domain_id, email, name, service_account, admin, support, groups, disabled,'
                " sessions_valid_after, created_at)"
                " SELECT domain_id, n || '.' || email, name, service_account, admin, support, groups, disabled,"
                ' sessions_valid_after, created_at FROM "user", generate_series(1, 1000) AS n'
                " WHERE email = 'service@example.com'"
            )
        )
        db.session.execute(
            text(
                "INSERT INTO token (application_id, user_id, access_token_digest, family, grant_type, scope,"
                " issued_at, expires_in, purgeable_at)"
                " SELECT application_id, user_id, md5(n::text) || md5(n::text), family, grant_type, scope,"
                " issued_at, expires_in, purgeable_at FROM token, generate_series(1, 3000) AS n"
            )
        )
        db.session.commit()
        with db.engine.connect() as connection:
            connection.execute(text('ANALYZE token, "user"'))
            connection.commit()
    assert present(client, "header", token).status_code == 200
    readers = app.extensions[READERS]
    values = {"digest": security.digest(token), "host": HOST, "default_host": None}
    # Both statements: with a default domain configured, and without one (the tests' setting).
    for claims in (presented.TOKEN_CLAIMS, presented.TOKEN_CLAIMS_BY_HOST):
        prepared = _Prepared.of(claims, readers.dialect)
        arguments = sql.SQL(", ").join(sql.Literal(values[name]) for name in prepared.parameters)
        with readers.pool.connection() as connection:
            connection.execute(sql.SQL("PREPARE skewed AS {}").format(sql.SQL(prepared.sql.decode())))
            try:
                connection.execute("SET plan_cache_mode = force_generic_plan")  # the plan after a few lookups
                explain = sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) EXECUTE skewed({})").format(arguments)
                plan = "\n".join(row[0] for row in connection.execute(explain))
            finally:
                connection.execute("DEALLOCATE skewed")
                connection.execute("RESET plan_cache_mode")
        assert "Merge Join" not in plan and "Hash Join" not in plan, plan
        assert "Nested Loop" in plan, plan
        # Each scan and join of the plan met one row at most: no walk through an index.
        assert {int(rows) for rows in re.findall(r"actual time=\S+ rows=(\d+)", plan)} == {1}, plan
