"""A domain's protected resources (RFC 8707, RFC 9728) through the admin API and the console: created, listed,
read, changed and removed with the stored effect and an audit record each; only the domain's admins (or a
system admin) change them; bad input is a 4xx naming the field; a token asked for one is for it alone."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord, ResourceServer
from tests.helpers import OTHER_HOST, authorize, headers, in_one_pass, signin
from tests.helpers.admin_api import ADMIN_SCOPES, call
from tests.helpers.code_exchange import exchange
from tests.helpers.console import as_admin, get, submit, text

MCP = "https://mcp.example.com/mcp"


def resources(setup) -> str:
    return f"/domains/{setup.domain.id}/resources"


def stored(world, setup) -> list[tuple[str, str, str]]:
    query = select(ResourceServer).where(ResourceServer.domain_id == setup.domain.id).order_by(ResourceServer.id)
    return [(r.uri, r.name, r.scopes) for r in world.query(query)]


def events(world) -> list[str]:
    query = select(AuditRecord).where(AuditRecord.event.like("resource_server.%")).order_by(AuditRecord.id)
    return [record.event for record in world.query(query)]


def test_an_admin_creates_lists_reads_changes_and_removes_a_resource(client, world, setup, keys):
    created = call(
        client, "post", resources(setup), keys.admin_key, {"uri": MCP, "name": "Tools", "scopes": "mqtt.read"}
    )
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    assert (body["uri"], body["name"], body["scopes"], body["domain"]) == (
        MCP,
        "Tools",
        "mqtt.read",
        str(setup.domain.id),
    )
    assert stored(world, setup) == [(MCP, "Tools", "mqtt.read")]
    assert call(client, "get", resources(setup), keys.support_key).get_json() == {"items": [body]}
    one = f"{resources(setup)}/{body['id']}"
    assert call(client, "get", one, keys.support_key).get_json() == body

    changed = call(client, "patch", one, keys.admin_key, {"name": "MQTT tools", "scopes": "mqtt.read mqtt.write"})
    assert changed.status_code == 200 and changed.get_json()["uri"] == MCP
    assert stored(world, setup) == [(MCP, "MQTT tools", "mqtt.read mqtt.write")]
    removed = call(client, "delete", one, keys.admin_key)
    assert removed.status_code == 200 and removed.get_json()["id"] == body["id"]
    assert stored(world, setup) == []
    assert call(client, "get", one, keys.admin_key).get_json()["error"] == "not_found"
    assert events(world) == ["resource_server.created", "resource_server.updated", "resource_server.deleted"]


def test_only_the_domains_admins_and_system_admins_change_its_resources(client, world, setup, keys):
    body = {"uri": MCP, "name": "Tools", "scopes": "mqtt.read"}
    other_admin = world.user(keys.other_domain, "admin@other.example.com", admin=True)
    other_key = world.api_key(other_admin, scopes=ADMIN_SCOPES, permission="admin")
    refused = call(client, "post", resources(setup), other_key, body, host=OTHER_HOST)
    assert refused.status_code == 404 and refused.get_json()["error"] == "not_found"
    support = call(client, "post", resources(setup), keys.support_key, body)
    assert support.status_code == 403 and support.get_json()["error"] == "forbidden"
    assert stored(world, setup) == [] and events(world) == []

    created = call(client, "post", resources(setup), keys.system_key, body, host=OTHER_HOST)
    assert created.status_code == 201
    one = f"{resources(setup)}/{created.get_json()['id']}"
    for method in ("get", "patch", "delete"):
        assert call(client, method, one, other_key, {"name": "x"}, host=OTHER_HOST).status_code == 404
    assert call(client, "patch", one, keys.support_key, {"name": "x"}).status_code == 403
    assert call(client, "delete", one, keys.support_key).status_code == 403
    assert stored(world, setup) == [(MCP, "Tools", "mqtt.read")]


@pytest.mark.parametrize(
    "body,field",
    [
        ({"uri": "/mcp", "name": "T", "scopes": "mqtt.read"}, "uri"),
        ({"uri": MCP + "#part", "name": "T", "scopes": "mqtt.read"}, "uri"),
        ({"uri": 7, "name": "T", "scopes": "mqtt.read"}, "uri"),
        ({"uri": MCP, "name": ["T"], "scopes": "mqtt.read"}, "name"),
        ({"uri": MCP, "name": "T", "scopes": "mqtt.delete"}, "scopes"),
        ({"uri": MCP, "name": "T", "scopes": "admin"}, "scopes"),
        ({"uri": MCP, "name": "T"}, "scopes"),
    ],
)
def test_bad_input_is_refused_naming_the_field(client, world, setup, keys, body, field):
    refused = call(client, "post", resources(setup), keys.admin_key, body)
    assert refused.status_code == 422, refused.get_json()
    assert list(refused.get_json()["fields"]) == [field]
    assert stored(world, setup) == []


def test_a_duplicate_uri_and_unknown_ids_are_refused(client, world, setup, keys):
    body = {"uri": MCP, "name": "Tools", "scopes": "mqtt.read"}
    first = call(client, "post", resources(setup), keys.admin_key, body).get_json()
    again = call(client, "post", resources(setup), keys.admin_key, body | {"name": "Again"})
    assert again.status_code == 409 and "URI" in again.get_json()["error_description"]
    second = call(client, "post", resources(setup), keys.admin_key, body | {"uri": MCP + "2"}).get_json()
    clash = call(client, "patch", f"{resources(setup)}/{second['id']}", keys.admin_key, {"uri": MCP})
    assert clash.status_code == 409
    wrong = call(client, "patch", f"{resources(setup)}/{first['id']}", keys.admin_key, {"scopes": "root"})
    assert wrong.status_code == 422 and list(wrong.get_json()["fields"]) == ["scopes"]
    assert stored(world, setup) == [(MCP, "Tools", "mqtt.read"), (MCP + "2", "Tools", "mqtt.read")]
    for record_id in ("999999", "abc", "1e3"):
        for method in ("get", "patch", "delete"):
            missing = call(client, method, f"{resources(setup)}/{record_id}", keys.admin_key, {"name": "x"})
            assert missing.status_code == 404 and missing.get_json()["error"] == "not_found"


def test_a_token_asked_for_a_resource_the_api_created_is_for_it_with_only_its_scopes(client, setup, keys):
    body = {"uri": MCP, "name": "Tools", "scopes": "mqtt.read"}
    assert call(client, "post", resources(setup), keys.admin_key, body).status_code == 201
    signin(client)
    answer = authorize(client, setup.confidential_app.client_id, scope="public mqtt.read", resource=MCP)
    code = answer.headers["Location"].split("code=")[1].split("&")[0]
    token = exchange(
        client, setup.confidential_app.client_id, code, where="form", client_secret=setup.client_secret, resource=MCP
    ).get_json()
    assert token.get("scope") == "mqtt.read", token
    inspected = client.get(
        "/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token['access_token']}")
    ).get_json()
    assert (inspected["aud"], inspected["scope"]) == (MCP, ["mqtt.read"])


@in_one_pass("sqlite")  # the pages over the same admin verbs the API tests check on both backends
def test_the_console_page_lists_registers_and_removes_resources(client, world, setup, people):
    as_admin(client)
    path = f"/domains/{setup.domain.id}/resources"
    assert "No protected resources." in text(get(client, path))
    bad = submit(client, path, {"uri": "/mcp", "name": "Tools", "scopes": "mqtt.read"})
    assert bad.status_code == 422 and "/mcp" in text(bad)
    created = submit(client, path, {"uri": MCP, "name": "Tools", "scopes": "mqtt.read"})
    assert created.status_code == 303
    page = text(get(client, path))
    assert f"Resource {MCP} registered." in page and "<td>Tools</td>" in page
    [server] = world.query(select(ResourceServer).where(ResourceServer.domain_id == setup.domain.id))
    removed = submit(client, f"{path}/{server.id}/delete", {"confirm": "1"})
    assert removed.status_code == 303
    assert stored(world, setup) == []
    assert events(world) == ["resource_server.created", "resource_server.deleted"]


def test_the_command_line_removes_a_resource_by_uri_and_a_duplicate_is_an_error(runner, world, setup):
    args = ["resources", "create", "--domain", setup.domain.host, "--uri", MCP, "--name", "Tools"]
    assert runner.invoke(args=[*args, "--scopes", "mqtt.read"]).exit_code == 0
    again = runner.invoke(args=[*args, "--scopes", "mqtt.read"])
    assert again.exit_code != 0 and "already exists" in again.output
    removed = runner.invoke(args=["resources", "delete", "--domain", setup.domain.host, "--uri", MCP])
    assert removed.exit_code == 0 and json.loads(removed.stdout)["uri"] == MCP
    assert stored(world, setup) == [] and events(world)[-1] == "resource_server.deleted"
    missing = runner.invoke(args=["resources", "delete", "--domain", setup.domain.host, "--uri", MCP])
    assert missing.exit_code != 0 and "No such record." in missing.output
