"""Configuring LDAP directories: the CLI, the admin API and the console, with the bind password
write-only and encrypted at rest."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import LdapDirectory
from tests.fakes.ldap_directory import PEOPLE, SERVICE_DN, SERVICE_PASSWORD
from tests.helpers import HOST, headers
from tests.helpers import signin as conftest_signin
from tests.helpers.ldap import events
from tests.helpers.pages import csrf_token

pytestmark = pytest.mark.slow

# The CLI


def test_the_cli_stores_the_bind_password_encrypted_and_never_shows_it(app, runner, world, directory, corp):
    [stored] = world.query(select(LdapDirectory))
    assert SERVICE_PASSWORD not in stored.bind_password_encrypted
    listed = json.loads(runner.invoke(args=["ldap", "list", "--domain", HOST]).stdout)["ldap"]
    assert [d["id"] for d in listed] == [corp]
    assert "bind_password" not in json.dumps(listed) and SERVICE_PASSWORD not in json.dumps(listed)
    assert listed[0]["user_filter"] == "(mail={email})" and listed[0]["group_attribute"] == "memberOf"
    assert json.loads(runner.invoke(args=["ldap", "test", corp]).stdout) == {"id": corp, "ok": True}
    [created] = events(world, "ldap.created")
    assert created.actor == "cli" and SERVICE_PASSWORD not in json.dumps(created.as_json())


def test_the_cli_refuses_plain_ldap_over_the_network(runner, setup, directory):
    result = runner.invoke(
        args=["ldap", "create", "--domain", HOST, "--name", "x", "--url", "ldap://ldap.example.org:389"]
        + ["--bind-dn", SERVICE_DN, "--bind-password", "p", "--base", PEOPLE]
    )
    assert result.exit_code != 0 and "StartTLS" in result.output


# The admin API


@pytest.fixture
def admin_token(world, setup):
    admin = world.user(setup.domain, "admin@example.com", admin=True, name="Admin")
    return world.api_key(admin, scopes="public admin", permission="admin")


def api(client, method, path, key, **kwargs):
    return client.open(f"/api/engine/v2{path}", method=method, headers=headers(**{"X-API-Key": key}), **kwargs)


def test_the_admin_api_manages_directories_with_a_write_only_bind_password(
    client, world, setup, directory, admin_token
):
    body = {
        "name": "Corp",
        "url": directory.starttls_url,
        "starttls": True,
        "bind_dn": SERVICE_DN,
        "bind_password": SERVICE_PASSWORD,
        "base_dn": PEOPLE,
        "ca_pem": directory.ca.ca_file.read_text(),
    }
    # A tenant admin may not point the service at loopback.
    refused = api(client, "POST", "/ldap", admin_token, json=body)
    assert refused.status_code == 422 and "url" in refused.get_json()["fields"]
    world.app.config["AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS"] = True  # an operator's setting for on-premises peers
    created = api(client, "POST", "/ldap", admin_token, json=body)
    assert created.status_code == 201, created.get_json()
    directory_id = created.get_json()["id"]
    assert "bind_password" not in created.get_json()
    shown = api(client, "GET", f"/ldap/{directory_id}", admin_token).get_json()
    assert SERVICE_PASSWORD not in json.dumps(shown) and shown["base_dn"] == PEOPLE
    assert api(client, "POST", f"/ldap/{directory_id}/test", admin_token).get_json() == {"id": directory_id, "ok": True}
    changed = api(client, "PATCH", f"/ldap/{directory_id}", admin_token, json={"bind_password": "wrong"})
    assert changed.status_code == 200
    tested = api(client, "POST", f"/ldap/{directory_id}/test", admin_token).get_json()
    assert tested["ok"] is False and "wrong" not in tested["error"]
    [updated] = events(world, "ldap.updated")
    assert updated.details["after"]["bind_password_changed"] is True and "wrong" not in json.dumps(updated.details)
    bad = api(client, "PATCH", f"/ldap/{directory_id}", admin_token, json={"user_filter": "mail=*"})
    assert bad.status_code == 422 and "user_filter" in bad.get_json()["fields"]
    assert api(client, "DELETE", f"/ldap/{directory_id}", admin_token).get_json() == {"deleted": directory_id}
    assert [e.target for e in events(world, "ldap.deleted")] == [f"ldap:{directory_id}"]


# The console


def test_the_console_creates_tests_and_deletes_a_directory(app, client, world, setup, directory):
    admin_user = world.user(setup.domain, "admin@example.com", admin=True, name="Admin")
    app.config["AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS"] = True  # an operator's setting for on-premises peers
    conftest_signin(client, admin_user.email)
    base = f"/auth/admin/domains/{setup.domain.id}/ldap"
    form = {
        "name": "Corp",
        "url": directory.starttls_url,
        "starttls": "y",
        "bind_dn": SERVICE_DN,
        "bind_password": SERVICE_PASSWORD,
        "base_dn": PEOPLE,
        "user_filter": "(mail={email})",
        "group_attribute": "memberOf",
        "ca_pem": directory.ca.ca_file.read_text(),
        "enabled": "y",
    }
    new = client.get(f"{base}/new", headers=headers())
    invalid = client.post(
        f"{base}/new", data={**form, "user_filter": "mail", "csrf_token": csrf_token(new)}, headers=headers()
    )
    assert invalid.status_code == 422 and "{email}" in invalid.get_data(as_text=True)
    created = client.post(f"{base}/new", data={**form, "csrf_token": csrf_token(new)}, headers=headers())
    assert created.status_code == 303
    [stored] = world.query(select(LdapDirectory))
    page = client.get(created.headers["Location"], headers=headers())
    assert SERVICE_PASSWORD not in page.get_data(as_text=True)
    tested = client.post(f"{base}/{stored.id}/test", data={"csrf_token": csrf_token(page)}, headers=headers())
    assert tested.status_code == 303
    assert "succeeded" in client.get(tested.headers["Location"], headers=headers()).get_data(as_text=True)
    # An edit with the bind password left empty keeps it.
    edited = client.post(
        f"{base}/{stored.id}",
        data={**form, "bind_password": "", "name": "Corp AD", "csrf_token": csrf_token(page)},
        headers=headers(),
    )
    assert edited.status_code == 303
    page = client.get(edited.headers["Location"], headers=headers())
    assert "Corp AD" in page.get_data(as_text=True)
    tested = client.post(f"{base}/{stored.id}/test", data={"csrf_token": csrf_token(page)}, headers=headers())
    assert "succeeded" in client.get(tested.headers["Location"], headers=headers()).get_data(as_text=True)
    confirm = client.get(f"{base}/{stored.id}/delete", headers=headers())
    assert (
        client.post(
            f"{base}/{stored.id}/delete", data={"csrf_token": csrf_token(confirm)}, headers=headers()
        ).status_code
        == 303
    )
    assert world.query(select(LdapDirectory)) == []
    assert [r.actor for r in events(world, "ldap.created")] == [f"user:{admin_user.id}"]
    assert events(world, "ldap.updated") and events(world, "ldap.deleted")
