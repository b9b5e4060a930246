"""User and API key lifecycle: the CLI, and what a client sees after it."""

import json

import pytest
from sqlalchemy import event, select

from authsvc.core.database import db, now
from authsvc.core.models import ApiKey, Token, User
from tests.helpers import HOST, PASSWORD, headers, signin

INSPECT = "/api/engine/v2/api_keys/inspect"


def run(runner, *args, input=None):
    result = runner.invoke(args=list(args), input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def password_grant(client, client_id, password=PASSWORD):
    body = {"grant_type": "password", "username": "service@example.com", "password": password, "client_id": client_id}
    return client.post("/auth/oauth/token", json=body, headers=headers())


def authorized(client, setup) -> int:
    """Status of an authorise call with the client's session cookie: 302 when the session is live."""
    query = {
        "response_type": "code",
        "client_id": setup.public_app.client_id,
        "redirect_uri": setup.public_app.redirect_uris[0],
    }
    return client.get("/auth/oauth/authorize", query_string=query, headers=headers()).status_code


@pytest.fixture
def signed_in_with_token(client, setup):
    """The service account holds a token and a live session."""
    token = password_grant(client, setup.public_app.client_id).get_json()
    signin(client, "service@example.com")
    assert authorized(client, setup) == 302
    return token


def inspect(client, token):
    return client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code


def test_set_password_revokes_tokens_and_sessions(runner, client, setup, signed_in_with_token):
    out = run(
        runner,
        "users",
        "set-password",
        "--domain",
        HOST,
        "--email",
        "service@example.com",
        "--password",
        "a new long password",
    )
    assert out["revoked_tokens"] == 1
    assert inspect(client, signed_in_with_token["access_token"]) == 401
    assert authorized(client, setup) == 303  # back to the sign-in page
    assert password_grant(client, setup.public_app.client_id).status_code == 400
    assert password_grant(client, setup.public_app.client_id, "a new long password").status_code == 200


def test_set_password_prompts_when_not_given(runner, setup):
    result = runner.invoke(
        args=["users", "set-password", "--domain", HOST, "--email", "service@example.com"],
        input="prompted password\nprompted password\n",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["email"] == "service@example.com"


def test_set_password_refuses_a_short_one(runner, setup):
    result = runner.invoke(
        args=["users", "set-password", "--domain", HOST, "--email", "service@example.com", "--password", "short"]
    )
    assert result.exit_code != 0
    assert "at least 8" in result.stderr


def test_disable_revokes_tokens_and_sessions_and_enable_lets_the_user_back(runner, client, setup, signed_in_with_token):
    out = run(runner, "users", "disable", "--domain", HOST, "--email", "service@example.com")
    assert out["disabled"] is True
    assert inspect(client, signed_in_with_token["access_token"]) == 401
    assert authorized(client, setup) == 303
    assert password_grant(client, setup.public_app.client_id).status_code == 400
    run(runner, "users", "enable", "--domain", HOST, "--email", "service@example.com")
    # Revoked stays revoked; a new sign-in works.
    assert inspect(client, signed_in_with_token["access_token"]) == 401
    assert password_grant(client, setup.public_app.client_id).status_code == 200
    [user] = [u for u in (run(runner, "users", "list")["users"]) if u["email"] == "service@example.com"]
    assert user["disabled"] is False


def test_other_users_keep_their_tokens(runner, client, setup, world, signed_in_with_token):
    run(runner, "users", "disable", "--domain", HOST, "--email", "person@example.com")
    assert inspect(client, signed_in_with_token["access_token"]) == 200


def test_user_commands_need_a_known_user(runner, setup):
    result = runner.invoke(args=["users", "disable", "--domain", HOST, "--email", "ghost@example.com"])
    assert result.exit_code != 0
    assert "no user" in result.stderr


# API keys


def test_api_keys_are_created_with_permission_and_expiry(runner, client, setup, world):
    world.update(User, setup.person.id, admin=True)
    out = run(
        runner,
        "api-keys",
        "create",
        "--domain",
        HOST,
        "--user",
        "person@example.com",
        "--name",
        "ops",
        "--scopes",
        "public mqtt.read",
        "--permission",
        "admin",
        "--expires-in-days",
        "30",
    )
    [key] = world.query(select(ApiKey))
    assert key.permission == "admin"
    assert 30 * 86400 - 5 <= key.expires_at - now() <= 30 * 86400
    claims = client.get(INSPECT, headers=headers(**{"X-API-Key": out["key"]})).get_json()
    assert claims["u"]["p"] == 2
    assert claims["scope"] == ["public", "mqtt.read"]
    assert claims["exp"] == key.expires_at


@pytest.mark.parametrize("permission", ["admin", "support"])
def test_a_key_cannot_carry_more_than_its_user_holds(runner, setup, permission):
    result = runner.invoke(
        args=[
            "api-keys",
            "create",
            "--domain",
            HOST,
            "--user",
            "person@example.com",
            "--name",
            "x",
            "--permission",
            permission,
        ]
    )
    assert result.exit_code != 0
    assert "needs one" in result.stderr


def test_api_keys_list_and_revoke(runner, client, setup):
    out = run(runner, "api-keys", "create", "--domain", HOST, "--user", "person@example.com", "--name", "ci")
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": out["key"]})).status_code == 200
    [listed] = run(runner, "api-keys", "list", "--domain", HOST)["api_keys"]
    assert listed["id"] == out["id"]
    assert listed["permission"] == "user"
    assert listed["revoked"] is False
    assert listed["last_used_at"] is not None
    revoked = run(runner, "api-keys", "revoke", out["id"])
    assert revoked["revoked"] is True
    # The next request fails: nothing is cached.
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": out["key"]})).status_code == 401
    assert run(runner, "api-keys", "list")["api_keys"][0]["revoked"] is True
    result = runner.invoke(args=["api-keys", "revoke", "no-such-key"])
    assert result.exit_code != 0
    assert "no API key" in result.stderr


def api_key_writes(app, client, key, times) -> int:
    """How many UPDATEs of api_key ``times`` inspect calls with ``key`` make."""
    writes = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("UPDATE API_KEY"):
            writes.append(statement)

    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", capture)
        try:
            for _ in range(times):
                assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 200
        finally:
            event.remove(db.engine, "before_cursor_execute", capture)
    return len(writes)


def test_last_used_at_is_written_at_most_once_a_minute(app, client, setup, world):
    key = world.api_key(setup.person)
    key_id = key.split(".")[0]
    assert api_key_writes(app, client, key, 5) == 1
    [first] = world.query(select(ApiKey.last_used_at))
    assert abs(first - now()) <= 2
    # Half a minute later: still no write.
    world.update(ApiKey, key_id, last_used_at=now() - 30)
    assert api_key_writes(app, client, key, 3) == 0
    # Over a minute later: one write, with the new time.
    world.update(ApiKey, key_id, last_used_at=now() - 61)
    assert api_key_writes(app, client, key, 3) == 1
    [latest] = world.query(select(ApiKey.last_used_at))
    assert abs(latest - now()) <= 2


def test_a_revoked_key_fails_even_right_after_use(client, setup, world):
    key = world.api_key(setup.person)
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 200
    world.update(ApiKey, key.split(".")[0], revoked_at=now())
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 401


def test_an_expired_key_fails(client, setup, world, clock):
    # A minute, not a second: a key made at the end of a second must not expire before its first use.
    key = world.api_key(setup.person, expires_at=now() + 60)
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 200
    clock.advance(60)
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 401


def test_tokens_of_a_disabled_user_are_revoked_in_the_database(runner, setup, world, signed_in_with_token):
    run(runner, "users", "disable", "--domain", HOST, "--email", "service@example.com")
    assert all(row.revoked_at for row in world.query(select(Token)))
