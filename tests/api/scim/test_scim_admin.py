"""The admin API and the console show which users came from SCIM and each domain's last SCIM call."""

from __future__ import annotations

import re

from tests.helpers import headers
from tests.helpers.console import as_admin, get, text

API = "/api/engine/v2"


def test_the_admin_api_shows_provisioned_by_and_the_last_scim_activity(client, scim, world, setup):
    admin_key = world.api_key(scim.admin, scopes="admin", permission="admin")
    created = scim.create_user("ada@example.com")
    auth = headers(**{"X-API-Key": admin_key})
    assert client.get(f"{API}/users/{created['id']}", headers=auth).get_json()["provisioned_by"] == "scim"
    assert client.get(f"{API}/users/{setup.person.id}", headers=auth).get_json()["provisioned_by"] is None
    listed = {u["email"]: u["provisioned_by"] for u in client.get(f"{API}/users", headers=auth).get_json()["items"]}
    assert listed["ada@example.com"] == "scim" and listed["person@example.com"] is None
    domain = client.get(f"{API}/domains/{setup.domain.id}", headers=auth).get_json()
    assert isinstance(domain["scim_last_activity"], int) and domain["scim_last_activity"] > 0


def test_the_console_shows_scim_users_and_the_last_scim_activity(client, scim, people, setup):
    scim.create_user("ada@example.com")
    as_admin(client)
    users = text(get(client, f"/domains/{setup.domain.id}/users"))
    row = re.search(r"ada@example\.com.*?</tr>", users, re.S).group(0)
    assert "from SCIM" in row
    assert "from SCIM" not in re.search(r"person@example\.com.*?</tr>", users, re.S).group(0)
    domains = text(get(client, "/"))
    assert "Last SCIM activity" in domains
    row = re.search(r"<code>auth\.example\.com</code>.*?</tr>", domains, re.S).group(0)
    assert "never" not in row
