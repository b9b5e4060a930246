"""Applications that must push their authorisation requests (RFC 9126): a request in the
query is refused to them; the setting (require_pushed_authorization_requests) is set by the CLI, the admin API,
the console and dynamic registration; discovery names PAR's endpoint. The requests are
tests/helpers/pushed_requests.py's.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, RegistrationToken
from tests.helpers import HOST, REDIRECT_URI, headers, signin
from tests.helpers import client_registration as client_registration_support
from tests.helpers.admin_api import ADMIN_SCOPES, call
from tests.helpers.console import as_admin, get, submit, text
from tests.helpers.pushed_requests import PAR_URL, assert_refused, authorize_pushed, basic, push, pushed_uri

# Applications that must push ------------------------------------------------------------------


def test_an_application_that_must_push_is_refused_a_request_in_the_query(client, world, setup):
    app, secret = world.application(
        setup.domain, confidential=True, require_pushed_authorization_requests=True, name="Pushes"
    )
    signin(client)
    query = {"response_type": "code", "client_id": app.client_id, "redirect_uri": REDIRECT_URI, "state": "s"}
    response = client.get("/auth/oauth/authorize", query_string=query, headers=headers())
    body = assert_refused(response, "invalid_request")
    assert "/auth/oauth/par" in body["error_description"]
    uri = pushed_uri(push(client, basic(app.client_id, secret)))
    assert authorize_pushed(client, app.client_id, uri).status_code == 302


def test_require_par_is_set_by_the_cli_and_the_admin_api(runner, client, world, setup):
    result = runner.invoke(
        args=["apps", "create", "--domain", HOST, "--name", "Bank", "--redirect-uri", REDIRECT_URI, "--require-par"]
    )
    assert result.exit_code == 0, result.output
    client_id = json.loads(result.output)["client_id"]
    [made] = world.query(select(Application).where(Application.client_id == client_id))
    assert made.require_pushed_authorization_requests is True
    result = runner.invoke(args=["apps", "update", "--client-id", client_id, "--no-require-par"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["require_pushed_authorization_requests"] is False
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes=ADMIN_SCOPES, permission="admin")
    change = {"require_pushed_authorization_requests": True}
    answer = call(client, "patch", f"/oauth_apps/{made.id}", key, json=change)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["require_pushed_authorization_requests"] is True


def test_the_console_shows_and_sets_require_par(client, world, setup, people):
    as_admin(client)
    path = f"/domains/{setup.domain.id}/applications/{setup.public_app.id}"
    page = get(client, path)
    assert "Require pushed authorisation requests" in text(page)
    fields = {"name": "SPA", "redirect_uris": REDIRECT_URI, "scopes": "public"}
    response = submit(client, path, {**fields, "require_pushed_authorization_requests": "y"}, page=page)
    assert response.status_code == 303
    [stored] = world.query(select(Application).where(Application.id == setup.public_app.id))
    assert stored.require_pushed_authorization_requests is True
    assert "Requires pushed authorisation requests (PAR)</dt><dd>Yes" in text(get(client, path))


# Discovery and registration ---------------------------------------------------------------------


@pytest.mark.parametrize("document", ["oauth-authorization-server", "openid-configuration"])
def test_discovery_names_the_endpoint(client, setup, document):
    metadata = client.get(f"/.well-known/{document}", headers=headers()).get_json()
    assert metadata["pushed_authorization_request_endpoint"] == PAR_URL
    assert metadata["require_pushed_authorization_requests"] is False


def test_a_registered_client_may_ask_to_be_required_to_push(client, world, setup):
    def register(**metadata):
        with world.app.app_context():
            token, value = RegistrationToken.issue(setup.domain.id, expires_in=600, max_uses=1, created_by="test")
        world.save(token)
        return client_registration_support.register(client, value, {**client_registration_support.METADATA, **metadata})

    answer = register(require_pushed_authorization_requests=True)
    assert answer.status_code == 201, answer.get_json()
    assert answer.get_json()["require_pushed_authorization_requests"] is True
    [made] = world.query(select(Application).where(Application.client_id == answer.get_json()["client_id"]))
    assert made.require_pushed_authorization_requests is True
    assert register(require_pushed_authorization_requests="yes").get_json()["error"] == "invalid_client_metadata"
