"""Where DPoP is switched on and announced: ``dpop_bound_access_tokens`` (CLI, admin API, console, dynamic
registration; RFC 9449 5.2) and the metadata's ``dpop_signing_alg_values_supported`` (RFC 9449 5.1)."""

from __future__ import annotations

import json

from sqlalchemy import select

from authsvc.core.models import Application
from tests.helpers import HOST, REDIRECT_URI, headers
from tests.helpers.admin_api import call
from tests.helpers.client_registration import METADATA, register
from tests.helpers.console import app_path, as_admin, get, submit


def stored(world, client_id: str) -> Application:
    (row,) = world.query(select(Application).where(Application.client_id == client_id))
    return row


def test_the_metadata_names_the_proof_algorithms(client, setup):
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        document = client.get(path, headers=headers()).get_json()
        assert document["dpop_signing_alg_values_supported"] == ["ES256", "RS256", "PS256", "EdDSA", "Ed25519"]


def test_the_cli_sets_and_clears_dpop(runner, setup, world):
    created = runner.invoke(
        args=["apps", "create", "--domain", HOST, "--name", "Bound", "--redirect-uri", REDIRECT_URI, "--dpop"]
    )
    assert created.exit_code == 0, created.output
    client_id = json.loads(created.stdout)["client_id"]
    assert stored(world, client_id).dpop_bound_access_tokens is True
    cleared = runner.invoke(args=["apps", "update", "--client-id", client_id, "--no-dpop"])
    assert cleared.exit_code == 0, cleared.output
    assert json.loads(cleared.stdout)["dpop_bound_access_tokens"] is False
    assert stored(world, client_id).dpop_bound_access_tokens is False


def test_the_admin_api_sets_dpop_and_refuses_a_non_boolean(client, setup, keys, world):
    body = {"name": "Bound", "redirect_uris": [REDIRECT_URI], "dpop_bound_access_tokens": True}
    created = call(client, "post", "/oauth_apps", keys.admin_key, body)
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["dpop_bound_access_tokens"] is True
    path = f"/oauth_apps/{created.get_json()['id']}"
    assert call(client, "get", path, keys.admin_key).get_json()["dpop_bound_access_tokens"] is True
    changed = call(client, "patch", path, keys.admin_key, {"dpop_bound_access_tokens": False})
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["dpop_bound_access_tokens"] is False
    refused = call(client, "patch", path, keys.admin_key, {"dpop_bound_access_tokens": "sometimes"})
    assert refused.status_code == 422
    assert "dpop_bound_access_tokens" in refused.get_json()["fields"]


def test_the_console_sets_dpop(client, setup, people, world):
    as_admin(client)
    path = app_path(setup, setup.public_app)
    form = {"name": "Bound", "redirect_uris": REDIRECT_URI, "scopes": "public", "dpop_bound_access_tokens": "y"}
    assert submit(client, path, form).status_code == 303
    assert stored(world, setup.public_app.client_id).dpop_bound_access_tokens is True
    assert "Requires DPoP" in get(client, path).get_data(as_text=True)


def test_a_client_registers_dpop_bound_access_tokens(client, world, issue):
    _, token = issue()
    registered = register(client, token, {**METADATA, "dpop_bound_access_tokens": True})
    assert registered.status_code == 201, registered.get_json()
    assert registered.get_json()["dpop_bound_access_tokens"] is True
    assert stored(world, registered.get_json()["client_id"]).dpop_bound_access_tokens is True
    refused = register(client, issue()[1], {**METADATA, "dpop_bound_access_tokens": "yes"})
    assert refused.status_code == 400
    assert refused.get_json()["error"] == "invalid_client_metadata"
