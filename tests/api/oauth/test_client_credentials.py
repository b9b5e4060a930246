"""The client credentials grant, acting as the application's service account."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import Application, AuditRecord, Token, User
from authsvc.oauth import clients
from tests.helpers import HOST, HttpsClient, headers
from tests.helpers.client_credentials import basic, bound_app
from tests.helpers.console import SECRET, app_path, as_admin, get, new_application, text


def client_credentials(client, app, secret, **body):
    return client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", **body},
        headers=headers(Authorization=basic(app.client_id, secret)),
    )


def inspect(client, access_token: str):
    return client.get("/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {access_token}"))


def test_basic_auth_issues_a_token_without_refresh_token(client, world, setup):
    app, secret = bound_app(world, setup)
    response = client_credentials(client, app, secret)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert set(body) == {"access_token", "token_type", "expires_in", "scope", "created_at"}
    assert body["token_type"] == "bearer"
    assert body["scope"] == "public"
    assert response.headers["Cache-Control"] == "no-store"


def test_token_acts_as_the_service_account_at_inspect(client, world, setup):
    app, secret = bound_app(world, setup)
    token = client_credentials(client, app, secret, scope="mqtt.read").get_json()["access_token"]
    response = inspect(client, token)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["u"]["e"] == "service@example.com"
    assert body["client_id"] == app.client_id
    assert body["scope"] == ["mqtt.read"]


def test_secret_in_the_body_or_json_also_authenticates(client, world, setup):
    app, secret = bound_app(world, setup)
    form = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", "client_id": app.client_id, "client_secret": secret},
        headers=headers(),
    )
    assert form.status_code == 200, form.get_json()
    as_json = client.post(
        "/auth/oauth/token",
        json={"grant_type": "client_credentials", "client_id": app.client_id, "client_secret": secret},
        headers=headers(),
    )
    assert as_json.status_code == 200, as_json.get_json()


def test_scope_must_be_the_applications(client, world, setup):
    app, secret = bound_app(world, setup)
    response = client_credentials(client, app, secret, scope="mqtt.write")
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_scope"


def test_wrong_secret_is_invalid_client(client, world, setup):
    app, _ = bound_app(world, setup)
    response = client_credentials(client, app, "not the secret")
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_client"


def test_public_application_cannot_use_it(client, setup):
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", "client_id": setup.public_app.client_id},
        headers=headers(),
    )
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_client"


def test_unbound_confidential_application_is_unauthorized_client(client, setup):
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials"},
        headers=headers(Authorization=basic(setup.confidential_app.client_id, setup.client_secret)),
    )
    assert response.status_code == 400
    assert response.get_json()["error"] == "unauthorized_client"


def test_disabled_service_account_is_unauthorized_client(client, world, setup):
    app, secret = bound_app(world, setup)
    world.update(User, setup.service.id, disabled=True)
    response = client_credentials(client, app, secret)
    assert response.status_code == 400
    assert response.get_json()["error"] == "unauthorized_client"
    assert world.query(select(Token)) == []


def test_each_request_reads_the_client_and_its_account_afresh(client, world, setup):
    # The client is read on inspect's readers, past the ORM's query: nothing of it is kept between requests.
    app, secret = bound_app(world, setup)
    assert client_credentials(client, app, secret).status_code == 200
    world.update(Application, app.id, client_secret_digest=security.digest("a new secret"))
    refused = client_credentials(client, app, secret)
    assert refused.status_code == 401
    assert refused.get_json()["error"] == "invalid_client"
    assert client_credentials(client, app, "a new secret").status_code == 200
    world.update(User, setup.service.id, disabled=True)
    assert client_credentials(client, app, "a new secret").get_json()["error"] == "unauthorized_client"
    world.update(User, setup.service.id, disabled=False)
    assert client_credentials(client, app, "a new secret", scope="mqtt.read").get_json()["scope"] == "mqtt.read"
    world.update(Application, app.id, scopes="public")
    assert client_credentials(client, app, "a new secret", scope="mqtt.read").get_json()["error"] == "invalid_scope"


def test_a_client_id_with_a_nul_character_names_no_client(app, world, setup):
    # libpq ends a text parameter at its first NUL: "<id>\x00junk" must not find the client "<id>".
    application, _ = bound_app(world, setup)
    with app.test_request_context("/auth/oauth/token", base_url=f"https://{HOST}"):
        assert clients.client_of_request_domain(application.client_id) is not None
        assert clients.client_of_request_domain(application.client_id + "\x00junk") is None


def test_issue_is_stored_and_audited_as_the_client(client, world, setup):
    app, secret = bound_app(world, setup)
    client_credentials(client, app, secret)
    [token] = world.query(select(Token))
    assert token.grant_type == "client_credentials"
    assert token.user_id == setup.service.id
    assert token.refresh_token_digest is None
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "token.issued"))
    assert record.actor == f"client:{app.client_id}"
    assert record.details["grant_type"] == "client_credentials"


def test_token_rate_limit_applies_per_client(make_app, world, setup):
    app, secret = bound_app(world, setup)
    limited = make_app(AUTHSVC_TOKEN_RATE_LIMIT="2/minute")
    limited.test_client_class = HttpsClient
    test_client = limited.test_client()
    statuses = [client_credentials(test_client, app, secret).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def admin_key(world, setup) -> str:
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    return world.api_key(admin, scopes="public admin", permission="admin")


def api(client, method, path, key, json=None):
    return getattr(client, method)("/api/engine/v2" + path, json=json, headers=headers(**{"X-API-Key": key}))


def test_admin_api_creates_a_bound_application_that_gets_tokens(client, world, setup):
    key = admin_key(world, setup)
    response = api(
        client,
        "post",
        "/oauth_apps",
        key,
        {"name": "Robot", "confidential": True, "service_account": str(setup.service.id), "scopes": "public"},
    )
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert created["service_account"] == str(setup.service.id)
    assert created["redirect_uris"] == []
    token = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials"},
        headers=headers(Authorization=basic(created["client_id"], created["client_secret"])),
    )
    assert token.status_code == 200, token.get_json()


@pytest.mark.parametrize(
    "body,field",
    [
        ({"name": "Robot", "confidential": True, "service_account": "person"}, "service_account"),
        ({"name": "Robot", "service_account": "SERVICE"}, "service_account"),
        ({"name": "Robot", "confidential": True}, "redirect_uris"),
    ],
)
def test_admin_api_refuses_a_bad_binding_with_a_field_error(client, world, setup, body, field):
    key = admin_key(world, setup)
    ids = {"person": str(setup.person.id), "SERVICE": str(setup.service.id)}
    if "service_account" in body:
        body = {**body, "service_account": ids[body["service_account"]]}
    response = api(client, "post", "/oauth_apps", key, body)
    assert response.status_code == 422, response.get_json()
    assert field in response.get_json()["fields"]
    assert world.query(select(Application).where(Application.name == "Robot")) == []


def test_admin_api_unbinds_with_null_and_deleting_the_account_unbinds(client, world, setup):
    key = admin_key(world, setup)
    app, secret = bound_app(world, setup)
    unbound = api(client, "patch", f"/oauth_apps/{app.id}", key, {"service_account": None})
    assert unbound.status_code == 200 and unbound.get_json()["service_account"] is None
    assert client_credentials(client, app, secret).get_json()["error"] == "unauthorized_client"
    other, _ = bound_app(world, setup)
    assert api(client, "delete", f"/users/{setup.service.id}", key).status_code in (200, 204)
    assert world.query(select(Application.service_account_id).where(Application.id == other.id)) == [None]


def test_cli_creates_a_bound_application(runner, setup):
    result = runner.invoke(
        args=[
            "apps",
            "create",
            "--domain",
            setup.domain.host,
            "--name",
            "Robot",
            "--confidential",
            "--service-account",
            "service@example.com",
        ]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {"id", "client_id", "client_secret"}


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--service-account", "service@example.com"], "needs --confidential"),
        (["--confidential", "--service-account", "person@example.com"], "not a service account"),
        (["--confidential"], "--redirect-uri is required"),
    ],
)
def test_cli_refuses_a_bad_binding(runner, setup, extra, message):
    result = runner.invoke(args=["apps", "create", "--domain", setup.domain.host, "--name", "Robot", *extra])
    assert result.exit_code != 0
    assert message in result.output


def test_console_creates_a_bound_application_and_shows_the_binding(client, world, setup):
    world.user(setup.domain, "admin@example.com", admin=True, name="Admin")
    as_admin(client)
    response = new_application(
        client, setup, name="Robot", redirect_uris="", confidential="y", service_account=str(setup.service.id)
    )
    assert response.status_code == 200, text(response)
    secret = re.search(SECRET, text(response)).group(1)
    [created] = world.query(select(Application).where(Application.name == "Robot"))
    assert created.service_account_id == setup.service.id
    assert client_credentials(client, created, secret).status_code == 200
    assert "client_credentials tokens act as it" in text(get(client, app_path(setup, created)))
    refused = new_application(client, setup, name="Robot 2", service_account=str(setup.person.id))
    assert refused.status_code == 422
    assert "must be a service account of the domain" in text(refused)
