"""Initial access tokens for dynamic client registration: the CLI, the admin API and the console issue,
list and revoke them; registered applications show in the console."""

from __future__ import annotations

import json
import re
import time

import pytest
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import Application, AuditRecord, RegistrationToken
from tests.helpers import HOST, OTHER_HOST, REDIRECT_URI, headers
from tests.helpers.admin_api import call
from tests.helpers.console import as_admin, get, submit, text

REGISTER = "/auth/oauth/register"
METADATA = {"redirect_uris": [REDIRECT_URI], "client_name": "Partner app"}


@pytest.fixture
def keys(world, setup):
    """API keys of an admin, a support user and a plain user of the domain."""

    class Keys:
        admin_key = world.api_key(
            world.user(setup.domain, "admin@example.com", admin=True), "public admin", permission="admin"
        )
        support_key = world.api_key(
            world.user(setup.domain, "support@example.com", support=True), "public admin", permission="support"
        )
        user_key = world.api_key(setup.person)

    return Keys


@pytest.fixture
def people(world, setup):
    world.user(setup.domain, "admin@example.com", admin=True, name="Admin")
    world.user(setup.domain, "support@example.com", support=True, name="Support")


def register(client, token):
    return client.post(REGISTER, json=METADATA, headers=headers(Authorization=f"Bearer {token}"))


def tokens(world):
    return world.query(select(RegistrationToken))


# CLI


def test_cli_creates_a_single_use_token_that_expires(runner, client, world, setup):
    before = int(time.time())
    result = runner.invoke(args=["registration-tokens", "create", "--domain", HOST, "--expires-in", "120"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {"id", "token"} <= set(out)
    [row] = tokens(world)
    assert row.id == out["id"] and row.token_digest == security.digest(out["token"])
    assert before + 120 <= row.expires_at <= int(time.time()) + 120
    assert row.max_uses == 1 and row.created_by == "cli"
    assert register(client, out["token"]).status_code == 201
    assert register(client, out["token"]).status_code == 401


def test_cli_uses_list_and_revoke(runner, client, world, setup):
    out = json.loads(runner.invoke(args=["registration-tokens", "create", "--domain", HOST, "--uses", "5"]).stdout)
    assert register(client, out["token"]).status_code == 201
    listed = json.loads(runner.invoke(args=["registration-tokens", "list", "--domain", HOST]).stdout)
    [item] = listed["registration_tokens"]
    assert (item["id"], item["uses"], item["max_uses"], item["state"]) == (out["id"], 1, 5, "active")
    assert "token" not in item and out["token"] not in json.dumps(listed)
    revoked = json.loads(runner.invoke(args=["registration-tokens", "revoke", out["id"]]).stdout)
    assert revoked["state"] == "revoked"
    assert register(client, out["token"]).status_code == 401
    events = [r.event for r in world.query(select(AuditRecord).order_by(AuditRecord.id))]
    assert events == ["registration_token.created", "application.registered", "registration_token.revoked"]


def test_cli_refuses_bad_input(runner, setup):
    for args in (
        ["--domain", "nowhere.example"],
        ["--domain", HOST, "--uses", "0"],
        ["--domain", HOST, "--expires-in", "5"],
    ):
        result = runner.invoke(args=["registration-tokens", "create", *args])
        assert result.exit_code != 0 and "Error" in result.output


# Admin API


def test_an_admin_issues_lists_and_revokes_tokens_through_the_api(client, world, keys):
    created = call(client, "post", "/registration_tokens", keys.admin_key, {"name": "partner", "max_uses": 2})
    assert created.status_code == 201
    body = created.get_json()
    assert body["max_uses"] == 2 and body["state"] == "active" and body["token"]
    assert register(client, body["token"]).status_code == 201
    listed = call(client, "get", "/registration_tokens", keys.admin_key).get_json()
    assert [i["id"] for i in listed["items"]] == [body["id"]] and listed["items"][0]["uses"] == 1
    assert "token" not in listed["items"][0]
    assert call(client, "get", f"/registration_tokens/{body['id']}", keys.support_key).status_code == 200
    revoked = call(client, "delete", f"/registration_tokens/{body['id']}", keys.admin_key)
    assert revoked.status_code == 200 and revoked.get_json()["state"] == "revoked"
    assert register(client, body["token"]).status_code == 401
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "registration_token.created"))
    assert record.actor == f"api_key:{keys.admin_key.split('.')[0]}"
    assert body["token"] not in json.dumps(record.details)


def test_only_admins_of_the_domain_issue_tokens(client, keys):
    assert call(client, "post", "/registration_tokens", keys.support_key, {}).status_code == 403
    assert call(client, "post", "/registration_tokens", keys.user_key, {}).status_code == 403
    answer = call(client, "post", "/registration_tokens", keys.admin_key, {"expires_in": 10, "max_uses": 0})
    assert answer.status_code == 422
    assert set(answer.get_json()["fields"]) == {"expires_in", "max_uses"}


# Console


def test_the_console_issues_shows_and_revokes_tokens_and_marks_registered_applications(client, world, people, setup):
    as_admin(client)
    base = f"/domains/{setup.domain.id}/registration_tokens"
    page = submit(client, base + "/new", {"name": "partner", "expires_in_hours": "2", "max_uses": "1"})
    assert page.status_code == 200
    value = re.search(r'<code id="secret" class="secret-value">([^<]+)</code>', text(page)).group(1)
    [row] = tokens(world)
    assert row.name == "partner" and row.token_digest == security.digest(value)
    registered = register(client, value).get_json()
    listing = text(get(client, base))
    assert row.id in listing and "1 of 1" in listing and "used up" in listing and value not in listing
    applications = text(get(client, f"/domains/{setup.domain.id}/applications"))
    assert ">registered</span>" in applications
    [application] = world.query(select(Application).where(Application.client_id == registered["client_id"]))
    detail = text(get(client, f"/domains/{setup.domain.id}/applications/{application.id}"))
    assert 'id="registered"' in detail and row.id in detail
    revoked = submit(client, f"{base}/{row.id}/revoke")
    assert revoked.status_code == 303
    assert tokens(world)[0].revoked_at is not None


def test_support_users_see_tokens_but_cannot_issue_them(client, world, people, setup):
    as_admin(client, "support@example.com")
    base = f"/domains/{setup.domain.id}/registration_tokens"
    assert get(client, base).status_code == 200
    assert get(client, base + "/new").status_code == 403


def test_deleting_a_domain_removes_its_registration_tokens_and_registered_applications(client, world, setup):
    from authsvc.core.models import Domain

    root = world.user(world.domain(OTHER_HOST), "root@example.com", admin=True, system_admin=True)
    root_key = world.api_key(root, "public admin", permission="admin")
    token = call(client, "post", "/registration_tokens", root_key, {"domain": str(setup.domain.id)}, host=OTHER_HOST)
    assert register(client, token.get_json()["token"]).status_code == 201
    deleted = call(client, "delete", f"/domains/{setup.domain.id}?force=true", root_key, host=OTHER_HOST)
    assert deleted.status_code == 200, deleted.get_json()
    assert tokens(world) == []
    assert world.query(select(Domain).where(Domain.id == setup.domain.id)) == []
