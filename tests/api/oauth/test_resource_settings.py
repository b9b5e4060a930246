"""An application's token settings on every surface: access_token_format and resources, by the admin API,
the command line and the console."""

from __future__ import annotations

import json

from sqlalchemy import select

from authsvc.core.models import Application
from tests.helpers.admin_api import call
from tests.helpers.console import app_path, as_admin, get, new_application, submit, text

ORDERS = "https://orders.example.com/api"
STOCK = "urn:example:stock"


def test_the_admin_api_sets_the_format_and_the_resources(client, setup, keys):  # noqa: F811
    created = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        {
            "name": "Orders",
            "redirect_uris": ["https://orders.example.com/cb"],
            "access_token_format": "jwt",
            "resources": [ORDERS, STOCK, ORDERS],
        },
    )
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    assert body["access_token_format"] == "jwt"
    assert body["resources"] == [ORDERS, STOCK]
    changed = call(client, "patch", f"/oauth_apps/{body['id']}", keys.admin_key, {"resources": None})
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["resources"] == []
    assert changed.get_json()["access_token_format"] == "jwt"


def test_an_application_is_opaque_with_no_resources_by_default(client, setup, keys):  # noqa: F811
    created = call(
        client, "post", "/oauth_apps", keys.admin_key, {"name": "Plain", "redirect_uris": ["https://a.example.com/cb"]}
    )
    assert created.get_json()["access_token_format"] == "opaque"
    assert created.get_json()["resources"] == []


def test_the_admin_api_refuses_a_bad_format_or_resource(client, setup, keys):  # noqa: F811
    response = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        {
            "name": "Bad",
            "redirect_uris": ["https://a.example.com/cb"],
            "access_token_format": "paseto",
            "resources": ["https://a.example.com/#frag"],
        },
    )
    assert response.status_code == 422, response.get_json()
    assert set(response.get_json()["fields"]) == {"access_token_format", "resources"}
    relative = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        {"name": "Bad", "redirect_uris": ["https://a.example.com/cb"], "resources": ["/api"]},
    )
    assert relative.status_code == 422
    assert "absolute URI" in relative.get_json()["fields"]["resources"]


def run(runner, *args):
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_command_line_sets_and_clears_them(runner, world):
    run(runner, "domains", "create", "--name", "Acme", "--host", "acme.example.com")
    created = run(
        runner,
        "apps",
        "create",
        "--domain",
        "acme.example.com",
        "--name",
        "Orders",
        "--redirect-uri",
        "https://orders.example.com/cb",
        "--access-token-format",
        "jwt",
        "--resource",
        ORDERS,
        "--resource",
        STOCK,
    )
    client_id = created["client_id"]
    [stored] = world.query(select(Application).where(Application.client_id == client_id))
    assert stored.access_token_format == "jwt"
    assert stored.resources == [ORDERS, STOCK]
    updated = run(runner, "apps", "update", "--client-id", client_id, "--resource", STOCK)
    assert updated["resources"] == [STOCK]
    updated = run(
        runner, "apps", "update", "--client-id", client_id, "--access-token-format", "opaque", "--no-resources"
    )
    assert updated["access_token_format"] == "opaque"
    assert updated["resources"] == []


def test_the_command_line_refuses_a_bad_resource_clearly(runner):
    run(runner, "domains", "create", "--name", "Acme", "--host", "acme.example.com")
    result = runner.invoke(
        args=[
            "apps",
            "create",
            "--domain",
            "acme.example.com",
            "--name",
            "Orders",
            "--redirect-uri",
            "https://orders.example.com/cb",
            "--resource",
            "orders",
        ]
    )
    assert result.exit_code != 0
    assert "--resource" in result.output
    assert "absolute URI" in result.output


def test_the_console_shows_and_changes_them(client, setup, people, world):  # noqa: F811
    as_admin(client)
    response = new_application(client, setup, access_token_format="jwt", resources=f"{ORDERS}\n{STOCK}\n")
    assert response.status_code == 303, text(response)
    [application] = world.query(select(Application).where(Application.name == "Room booking"))
    assert application.access_token_format == "jwt"
    assert application.resources == [ORDERS, STOCK]
    page = text(get(client, app_path(setup, application)))
    assert "JWT (RFC 9068)" in page
    assert ORDERS in page
    refused = submit(
        client,
        app_path(setup, application),
        {
            "name": "Room booking",
            "redirect_uris": "https://app.example.com/callback",
            "scopes": "public",
            "resources": "orders",
        },
    )
    assert refused.status_code == 422
    assert "absolute URI" in text(refused)
