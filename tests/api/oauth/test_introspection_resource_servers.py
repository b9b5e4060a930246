"""Introspection of another client's token only for resource servers: an application
an admin marked (`introspect`), never a dynamically registered client; any client may introspect its own
tokens, and another's token is simply inactive to it (RFC 7662 2.2)."""

from __future__ import annotations

import json

import pytest

from authsvc.core.models import Application
from tests.helpers import REDIRECT_URI, headers
from tests.helpers.admin_api import ADMIN_SCOPES, call
from tests.helpers.client_registration import METADATA, register, stored
from tests.helpers.introspection import INTROSPECT, basic, password_grant


@pytest.fixture
def domain(setup):
    return setup.domain


@pytest.fixture
def tokens(client, setup):
    """Tokens of the public application, for the service account."""
    return password_grant(client, setup.public_app.client_id, scope="public mqtt.read")


def introspect(client, token, client_id, secret):
    return client.post(INTROSPECT, data={"token": token}, headers=headers(Authorization=basic(client_id, secret)))


def test_a_confidential_client_not_marked_sees_another_clients_tokens_as_inactive(client, setup, tokens):
    for token in (tokens["access_token"], tokens["refresh_token"]):
        response = introspect(client, token, setup.confidential_app.client_id, setup.client_secret)
        assert response.status_code == 200
        assert response.get_json() == {"active": False}


def test_a_resource_server_an_admin_marked_may_introspect_other_clients_tokens(client, setup, world, tokens):
    world.update(Application, setup.confidential_app.id, introspect=True)
    response = introspect(client, tokens["access_token"], setup.confidential_app.client_id, setup.client_secret)
    assert response.get_json()["active"] is True
    assert response.get_json()["client_id"] == setup.public_app.client_id


def test_a_client_may_always_introspect_its_own_tokens(client, setup):
    own = password_grant(client, setup.confidential_app.client_id, scope="public", client_secret=setup.client_secret)
    response = introspect(client, own["access_token"], setup.confidential_app.client_id, setup.client_secret)
    assert response.get_json()["active"] is True


def test_a_dynamically_registered_client_cannot_introspect_other_clients_tokens(client, setup, world, issue, tokens):
    _, value = issue()
    registered = register(client, value, METADATA).get_json()
    response = introspect(client, tokens["access_token"], registered["client_id"], registered["client_secret"])
    assert response.get_json() == {"active": False}
    # Not even if the row says so: it registered itself, nobody vouched for it.
    world.update(Application, stored(world, registered["client_id"]).id, introspect=True)
    response = introspect(client, tokens["access_token"], registered["client_id"], registered["client_secret"])
    assert response.get_json() == {"active": False}


def test_an_admin_marks_a_resource_server_through_the_api_but_never_a_registered_client(
    client, setup, world, issue, tokens
):
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes=ADMIN_SCOPES, permission="admin")
    path = f"/oauth_apps/{setup.confidential_app.id}"
    changed = call(client, "patch", path, key, json={"introspect": True})
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["introspect"] is True
    response = introspect(client, tokens["access_token"], setup.confidential_app.client_id, setup.client_secret)
    assert response.get_json()["active"] is True

    public = call(client, "patch", f"/oauth_apps/{setup.public_app.id}", key, json={"introspect": True})
    assert public.status_code == 422
    assert "introspect" in public.get_json()["fields"]

    _, value = issue()
    registered = register(client, value, METADATA).get_json()
    app_id = stored(world, registered["client_id"]).id
    refused = call(client, "patch", f"/oauth_apps/{app_id}", key, json={"introspect": True})
    assert refused.status_code == 422
    assert "registered" in refused.get_json()["fields"]["introspect"]


def test_the_cli_marks_a_resource_server(runner, setup, world, client, tokens):
    created = runner.invoke(
        args=[
            "apps",
            "create",
            "--domain",
            setup.domain.host,
            "--name",
            "RS",
            "--redirect-uri",
            REDIRECT_URI,
            "--confidential",
            "--introspect",
        ]
    )
    assert created.exit_code == 0, created.output
    app = json.loads(created.output)
    response = introspect(client, tokens["access_token"], app["client_id"], app["client_secret"])
    assert response.get_json()["active"] is True
    off = runner.invoke(args=["apps", "update", "--client-id", app["client_id"], "--no-introspect"])
    assert off.exit_code == 0, off.output
    assert json.loads(off.output)["introspect"] is False
    response = introspect(client, tokens["access_token"], app["client_id"], app["client_secret"])
    assert response.get_json() == {"active": False}
