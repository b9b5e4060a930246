"""The CLI writes through the admin verbs: each change is audited as ``cli`` and follows the admin rules."""

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import ApiKey, Application, AuditRecord, Domain, User
from tests.helpers import HOST, headers

NEW_HOST = "new.example.com"


def run(runner, *args):
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def records(world, event):
    return world.query(select(AuditRecord).where(AuditRecord.event == event).order_by(AuditRecord.id))


def app_args(*extra):
    return ["apps", "create", "--domain", HOST, "--redirect-uri", "https://x.example/cb", *extra]


SSO_ARGS = ["sso", "create", "--domain", HOST, "--name", "IdP", "--client-id", "c", "--client-secret", "s3cret"]


# What each write command records: (command, event, the record's target from the output, a detail).
@pytest.mark.parametrize(
    "command,event,target,check",
    [
        (
            ["domains", "create", "--name", "New", "--host", NEW_HOST],
            "domain.created",
            lambda out, s: f"domain:{out['id']}",
            lambda r: r.details["after"]["host"] == NEW_HOST,
        ),
        (
            ["domains", "scopes", "add", "--domain", HOST, "booking.read"],
            "domain.updated",
            lambda out, s: f"domain:{s.domain.id}",
            lambda r: (
                "booking.read" in r.details["after"]["scopes"] and "booking.read" not in r.details["before"]["scopes"]
            ),
        ),
        (
            ["domains", "scopes", "remove", "--domain", HOST, "mqtt.write"],
            "domain.updated",
            lambda out, s: f"domain:{s.domain.id}",
            lambda r: (
                "mqtt.write" in r.details["before"]["scopes"] and "mqtt.write" not in r.details["after"]["scopes"]
            ),
        ),
        (
            app_args("--name", "Web", "--confidential"),
            "application.created",
            lambda out, s: f"application:{out['id']}",
            lambda r: r.details["after"]["name"] == "Web" and r.details["after"]["confidential"] is True,
        ),
        (
            ["users", "create", "--domain", HOST, "--email", "new@example.com", "--password", "long enough password"],
            "user.created",
            lambda out, s: f"user:{out['id']}",
            lambda r: r.details["after"]["email"] == "new@example.com" and "long enough" not in json.dumps(r.details),
        ),
        (
            [
                "users",
                "set-password",
                "--domain",
                HOST,
                "--email",
                "person@example.com",
                "--password",
                "a new password",
            ],
            "user.updated",
            lambda out, s: f"user:{s.person.id}",
            lambda r: r.details["after"]["password_changed"] is True and "a new password" not in json.dumps(r.details),
        ),
        (
            ["users", "disable", "--domain", HOST, "--email", "person@example.com"],
            "user.updated",
            lambda out, s: f"user:{s.person.id}",
            lambda r: r.details["before"]["disabled"] is False and r.details["after"]["disabled"] is True,
        ),
        (
            ["api-keys", "create", "--domain", HOST, "--user", "person@example.com", "--name", "ci"],
            "api_key.created",
            lambda out, s: f"api_key:{out['id']}",
            lambda r: r.details["after"]["name"] == "ci",
        ),
        (
            [*SSO_ARGS, "--issuer", "https://idp.example.com"],
            "sso.created",
            lambda out, s: f"sso:{out['id']}",
            lambda r: (
                r.details["after"]["issuer"] == "https://idp.example.com" and "s3cret" not in json.dumps(r.details)
            ),
        ),
        (
            ["keys", "rotate", "--domain", HOST],
            "signing_key.rotated",
            lambda out, s: f"signing_key:{out['kid']}",
            lambda r: r.details["alg"] == "RS256",
        ),
    ],
    ids=[
        "domains-create",
        "domains-scopes-add",
        "domains-scopes-remove",
        "apps-create",
        "users-create",
        "users-set-password",
        "users-disable",
        "api-keys-create",
        "sso-create",
        "keys-rotate",
    ],
)
def test_each_cli_write_is_audited_as_cli(runner, world, setup, command, event, target, check):
    before = len(records(world, event))
    out = run(runner, *command)
    [record] = records(world, event)[before:]
    assert record.actor == "cli"
    assert record.target == target(out, setup)
    assert record.ip is None
    assert check(record)


def test_apps_update_enable_and_revoke_are_audited_as_cli(runner, world, setup):
    run(runner, "apps", "update", "--client-id", setup.public_app.client_id, "--name", "Renamed")
    [updated] = records(world, "application.updated")
    assert (updated.actor, updated.target) == ("cli", f"application:{setup.public_app.id}")
    assert updated.details["before"]["name"] != "Renamed"
    assert updated.details["after"]["name"] == "Renamed"

    run(runner, "users", "disable", "--domain", HOST, "--email", "person@example.com")
    run(runner, "users", "enable", "--domain", HOST, "--email", "person@example.com")
    enabled = records(world, "user.updated")[-1]
    assert enabled.actor == "cli" and enabled.details["after"]["disabled"] is False

    key = run(runner, "api-keys", "create", "--domain", HOST, "--user", "person@example.com", "--name", "ci")
    run(runner, "api-keys", "revoke", key["id"])
    run(runner, "api-keys", "revoke", key["id"])  # already revoked: no second record
    [revoked] = records(world, "api_key.revoked")
    assert (revoked.actor, revoked.target) == ("cli", f"api_key:{key['id']}")


def test_seed_demo_writes_through_the_admin_verbs_too(runner, world):
    run(runner, "seed-demo")
    events = {r.event: r.actor for r in world.query(select(AuditRecord))}
    assert {e: events.get(e) for e in ("domain.created", "application.created", "user.created")} == {
        "domain.created": "cli",
        "application.created": "cli",
        "user.created": "cli",
    }


def test_a_system_admin_finds_the_command_lines_changes_in_the_audit_log(runner, client, world, setup):
    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    key = world.api_key(root, scopes="public admin", permission="admin")
    run(runner, "users", "create", "--domain", HOST, "--email", "new@example.com", "--password", "long enough pw")
    response = client.get("/api/engine/v2/audit", query_string={"actor": "cli"}, headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 200
    [item] = response.get_json()["items"]
    assert (item["actor"], item["event"]) == ("cli", "user.created")


def test_a_reserved_scope_in_use_is_not_removed_either(runner, world, setup):
    run(runner, "domains", "scopes", "add", "--domain", HOST, "admin")
    world.update(Application, setup.public_app.id, scopes="public admin")
    result = runner.invoke(args=["domains", "scopes", "remove", "--domain", HOST, "admin"])
    assert result.exit_code != 0
    assert f"still in use by application {setup.public_app.client_id}" in result.stderr
    [domain] = world.query(select(Domain))
    assert "admin" in domain.scope_list


# Admin rules the command line did not check before: it follows them now.


def test_an_application_name_longer_than_the_admin_allows_is_refused(runner, world, setup):
    result = runner.invoke(args=app_args("--name", "x" * 201))
    assert result.exit_code != 0
    assert result.stdout == ""
    assert "--name: must be at most 200 characters" in result.stderr
    assert world.query(select(Application).where(Application.name == "x" * 201)) == []
    assert records(world, "application.created") == []


def test_an_api_key_expiring_past_what_sql_can_hold_is_refused(runner, world, setup):
    args = ["api-keys", "create", "--domain", HOST, "--user", "person@example.com", "--name", "forever"]
    result = runner.invoke(args=[*args, "--expires-in-days", "1000000"])
    assert result.exit_code != 0
    assert "--expires-in-days: must be at most 2147483647" in result.stderr
    assert world.query(select(ApiKey)) == []
    assert records(world, "api_key.created") == []


def test_a_blank_domain_name_is_refused(runner, world):
    result = runner.invoke(args=["domains", "create", "--name", "  ", "--host", NEW_HOST])
    assert result.exit_code != 0
    assert "--name: must not be empty" in result.stderr
    assert world.query(select(Domain)) == []


def test_a_refused_user_change_leaves_the_user_and_the_log_alone(runner, world, setup):
    result = runner.invoke(
        args=[
            "users",
            "create",
            "--domain",
            HOST,
            "--email",
            "x@example.com",
            "--password",
            "long enough",
            "--name",
            "\x00",
        ]
    )
    assert result.exit_code != 0
    assert "--name: must be at most 200 characters, without NUL" in result.stderr
    assert world.query(select(User).where(User.email == "x@example.com")) == []
    assert records(world, "user.created") == []
