"""The admin API (Domains -> Applications, users, keys, SSO, from scripts): who may do what, domains,
and the audit log.

Applications are tests/api/admin/test_admin_api_applications.py; users, API keys and SSO providers
tests/api/admin/test_admin_api_accounts.py; odd ids, numbers and nulls (a 4xx, never a 500)
tests/api/admin/test_admin_api_input.py.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import ApiKey, Application, Consent, Domain, User
from tests.helpers import HOST, OTHER_HOST, PASSWORD, headers
from tests.helpers.admin_api import ADMIN_SCOPES, API, call

# Who may do what


def test_support_may_read_but_not_change(client, setup, keys):
    assert call(client, "get", "/oauth_apps", keys.support_key).status_code == 200
    assert call(client, "get", f"/users/{setup.person.id}", keys.support_key).status_code == 200
    response = call(client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.support_key, {"name": "x"})
    assert response.status_code == 403
    assert response.get_json()["error"] == "forbidden"
    assert call(client, "delete", f"/users/{setup.person.id}", keys.support_key).status_code == 403


@pytest.mark.parametrize(
    "method,path",
    [("get", "/oauth_apps"), ("get", "/users"), ("get", "/audit"), ("post", "/domains"), ("get", "/domains")],
)
def test_everyone_else_gets_403(client, setup, keys, method, path):
    response = call(client, method, path, keys.user_key, {} if method == "post" else None)
    assert response.status_code == 403
    assert response.get_json()["error"] == "forbidden"


def test_a_user_key_of_an_admin_user_is_not_an_admin_credential(client, setup, keys, world):
    capped = world.api_key(keys.admin_user, scopes=ADMIN_SCOPES, permission="user")
    assert call(client, "get", "/oauth_apps", capped).status_code == 403


def test_no_credential_is_401(client, setup):
    assert client.get(f"{API}/oauth_apps", headers=headers()).status_code == 401


def test_an_admin_token_works_like_an_admin_key(client, setup, keys, world):
    world.update(User, setup.service.id, admin=True)
    world.update(Application, setup.public_app.id, scopes=ADMIN_SCOPES)
    token = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
            "scope": ADMIN_SCOPES,
        },
        headers=headers(),
    ).get_json()["access_token"]
    response = client.get(f"{API}/users", headers=headers(Authorization=f"Bearer {token}"))
    assert response.status_code == 200


def test_domain_admins_see_only_their_domain(client, setup, keys, world):
    other_app, _ = world.application(keys.other_domain, name="Elsewhere")
    listed = call(client, "get", "/oauth_apps", keys.admin_key).get_json()
    assert {a["name"] for a in listed["items"]} == {"Test app", "Confidential"}
    assert call(client, "get", f"/oauth_apps/{other_app.id}", keys.admin_key).status_code == 404
    assert call(client, "delete", f"/oauth_apps/{other_app.id}", keys.admin_key).status_code == 404
    assert [d["host"] for d in call(client, "get", "/domains", keys.admin_key).get_json()["items"]] == [HOST]


def test_system_admins_reach_every_domain(client, setup, keys, world):
    listed = call(client, "get", "/oauth_apps", keys.system_key, host=OTHER_HOST).get_json()
    assert listed["total"] == 2
    response = call(
        client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.system_key, {"name": "By root"}, host=OTHER_HOST
    )
    assert response.status_code == 200
    filtered = call(client, "get", f"/oauth_apps?domain={setup.domain.id}", keys.system_key, host=OTHER_HOST)
    assert filtered.get_json()["total"] == 2


def test_an_admin_cannot_disable_or_demote_themselves(client, setup, keys):
    path = f"/users/{keys.admin_user.id}"
    disabled = call(client, "patch", path, keys.admin_key, {"disabled": True})
    assert disabled.status_code == 422 and "disabled" in disabled.get_json()["fields"]
    demoted = call(client, "patch", path, keys.admin_key, {"admin": False})
    assert demoted.status_code == 422 and "admin" in demoted.get_json()["fields"]


def test_a_key_carries_no_more_than_its_user_holds(client, setup, keys):
    response = call(
        client, "post", "/api_keys", keys.admin_key, {"user": "person@example.com", "name": "k", "permission": "admin"}
    )
    assert response.status_code == 422
    assert "not an admin" in response.get_json()["fields"]["permission"]


def test_a_domain_admin_cannot_take_over_a_system_admin_of_the_domain(client, setup, keys, world):
    root_here = world.user(setup.domain, "root-here@example.com", admin=True, system_admin=True)
    path = f"/users/{root_here.id}"
    assert call(client, "patch", path, keys.admin_key, {"password": "attacker password"}).status_code == 403
    assert call(client, "delete", path, keys.admin_key).status_code == 403
    assert call(client, "post", f"{path}/revoke", keys.admin_key).status_code == 403
    key = call(
        client, "post", "/api_keys", keys.admin_key, {"user": str(root_here.id), "name": "x", "permission": "admin"}
    )
    assert key.status_code == 403
    assert world.query(select(ApiKey).where(ApiKey.user_id == root_here.id)) == []
    by_root = call(client, "patch", path, keys.system_key, {"name": "Root"}, host=OTHER_HOST)
    assert by_root.status_code == 200


# Domains


def test_domains_are_created_by_system_admins_and_deleted_only_when_empty_unless_forced(client, setup, keys, world):
    assert call(client, "post", "/domains", keys.admin_key, {"name": "X", "host": "x.example"}).status_code == 403
    created = call(
        client, "post", "/domains", keys.system_key, {"name": "New", "host": "New.Example"}, host=OTHER_HOST
    ).get_json()
    assert created["host"] == "new.example"
    refused = call(client, "delete", f"/domains/{setup.domain.id}", keys.system_key, host=OTHER_HOST)
    assert refused.status_code == 409
    forced = call(client, "delete", f"/domains/{setup.domain.id}?force=true", keys.system_key, host=OTHER_HOST)
    assert forced.status_code == 200
    assert world.query(select(Domain).where(Domain.id == setup.domain.id)) == []
    assert world.query(select(User).where(User.domain_id == setup.domain.id)) == []
    assert world.query(select(Consent)) == []
    empty = call(client, "delete", f"/domains/{created['id']}", keys.system_key, host=OTHER_HOST)
    assert empty.status_code == 200


def test_a_duplicate_domain_host_is_a_field_error(client, setup, keys):
    response = call(client, "post", "/domains", keys.system_key, {"name": "Again", "host": HOST}, host=OTHER_HOST)
    assert response.status_code == 422
    assert "host" in response.get_json()["fields"]


# The audit log


def test_the_audit_log_lists_changes_with_filters(client, setup, keys):
    call(client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {"name": "A"})
    call(client, "patch", f"/users/{setup.person.id}", keys.admin_key, {"name": "B"})
    everything = call(client, "get", "/audit", keys.admin_key).get_json()
    assert [r["event"] for r in everything["items"]][:2] == ["user.updated", "application.updated"]
    only_apps = call(client, "get", "/audit?event=application.*", keys.admin_key).get_json()
    assert {r["event"] for r in only_apps["items"]} == {"application.updated"}
    by_target = call(client, "get", f"/audit?target=user:{setup.person.id}", keys.admin_key).get_json()
    assert by_target["total"] == 1
    assert call(client, "get", "/audit?since=abc", keys.admin_key).status_code == 400
    other = call(client, "get", "/audit", keys.system_key, host=OTHER_HOST).get_json()
    assert other["total"] >= 2, "system admins see every domain"
