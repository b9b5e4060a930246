"""No system-admin power through an application bound to a user.

The escalation found on main: a domain admin binds a confidential application to a service account
of their domain that is also a system admin, takes a client_credentials token with the admin scope,
and with it lists other domains' users and resets the system admin's password. Binding, and changing
what acts as a bound account (secret, keys, scopes, binding), need the right to change that account;
and a system admin cannot be a service account at all.
"""

from __future__ import annotations

import base64
import json

import pytest
from flask_migrate import upgrade
from sqlalchemy import text

from authsvc import create_app
from authsvc.cli import migrations
from authsvc.core.database import db
from authsvc.core.models import Application
from tests.helpers import OTHER_HOST, base_config, headers
from tests.helpers.admin_api import ADMIN_SCOPES, call


@pytest.fixture
def root_service_account(world, setup):
    """A system admin of the domain who is also a service account: a row today's rules no longer make."""
    return world.user(setup.domain, "root-robot@example.com", admin=True, system_admin=True, service_account=True)


def client_credentials(client, client_id: str, secret: str, scope: str):
    auth = "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    body = {"grant_type": "client_credentials", "scope": scope}
    return client.post("/auth/oauth/token", data=body, headers=headers(Authorization=auth))


def test_a_domain_admin_cannot_turn_a_system_admin_account_into_an_application_that_reaches_every_domain(
    client, setup, world, keys, root_service_account
):
    # 1. Bind an application to the system admin's account: refused.
    bound = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        json={
            "name": "Innocent integration",
            "confidential": True,
            "service_account": str(root_service_account.id),
            "scopes": ADMIN_SCOPES,
        },
    )
    assert bound.status_code == 403, bound.get_json()

    # 2. An application a system admin bound earlier: the domain admin can neither take its secret nor
    # widen its scopes nor rebind it.
    made, _ = world.application(
        setup.domain, confidential=True, redirect_uris=[], scopes="public", service_account_id=root_service_account.id
    )
    regenerated = call(client, "post", f"/oauth_apps/{made.id}/regenerate", keys.admin_key)
    assert regenerated.status_code == 403
    widened = call(client, "patch", f"/oauth_apps/{made.id}", keys.admin_key, json={"scopes": ADMIN_SCOPES})
    assert widened.status_code == 403
    stored = world.query(db.select(Application).where(Application.id == made.id))[0]
    assert stored.scopes == "public" and stored.client_secret_digest == made.client_secret_digest

    # 3. Even with the secret and the admin scope in hand (set in the database), its tokens are not the
    # system admin's: the client_credentials grant refuses to act as one.
    _, secret = world.application(
        setup.domain,
        confidential=True,
        redirect_uris=[],
        scopes=ADMIN_SCOPES,
        service_account_id=root_service_account.id,
        client_id="held-by-attacker",
    )
    answer = client_credentials(client, "held-by-attacker", secret, ADMIN_SCOPES)
    assert answer.status_code == 400, answer.get_json()
    assert answer.get_json()["error"] == "unauthorized_client"


def test_a_domain_admin_may_still_bind_and_change_an_application_of_an_ordinary_service_account(client, setup, keys):
    created = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        json={"name": "Robot", "confidential": True, "service_account": str(setup.service.id), "scopes": "public"},
    )
    assert created.status_code == 201, created.get_json()
    app_id = created.get_json()["id"]
    assert call(client, "post", f"/oauth_apps/{app_id}/regenerate", keys.admin_key).status_code == 200
    widened = call(client, "patch", f"/oauth_apps/{app_id}", keys.admin_key, json={"scopes": "public mqtt.read"})
    assert widened.status_code == 200, widened.get_json()


def test_a_system_admin_cannot_be_a_service_account_through_the_api(client, setup, keys):
    created = call(
        client,
        "post",
        "/users",
        keys.system_key,
        json={
            "domain": str(setup.domain.id),
            "email": "both@example.com",
            "password": "a long password",
            "admin": True,
            "system_admin": True,
            "service_account": True,
        },
        host=OTHER_HOST,
    )
    assert created.status_code == 422
    assert "system admin cannot be a service account" in json.dumps(created.get_json()["fields"])
    promoted = call(
        client, "patch", f"/users/{setup.service.id}", keys.system_key, json={"system_admin": True}, host=OTHER_HOST
    )
    assert promoted.status_code == 422
    assert "system_admin" in promoted.get_json()["fields"]


def test_the_cli_refuses_a_system_admin_service_account(runner, setup):
    result = runner.invoke(
        args=[
            "users",
            "create",
            "--domain",
            setup.domain.host,
            "--email",
            "both@example.com",
            "--password",
            "a long password",
            "--system-admin",
            "--service-account",
        ]
    )
    assert result.exit_code != 0
    assert "cannot go together" in result.output


def test_the_upgrade_stops_on_a_system_admin_who_is_a_service_account_and_says_who(tmp_path, caplog):
    app = create_app(base_config() | {"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'old.sqlite3'}"})
    migrations.install(app)
    with app.app_context():
        upgrade(revision="b8d2f4a6c1e3")
        with db.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO domain (id, name, host, scopes, created_at, mfa_require) "
                    "VALUES (1, 'd', 'd.example', 'public', 0, 'off')"
                )
            )
            conn.execute(
                text(
                    'INSERT INTO "user" (id, domain_id, email, name, service_account, admin, support, groups, '
                    "disabled, sessions_valid_after, created_at, system_admin) "
                    "VALUES (7, 1, 'root-robot@example.com', '', 1, 1, 0, '[]', 0, 0, 0, 1)"
                )
            )
        # Flask-Migrate logs the migration's error and exits non-zero, as `flask db upgrade` does.
        with pytest.raises(SystemExit):
            upgrade()
        assert "both system admins and service accounts" in caplog.text
        assert "root-robot@example.com (id 7)" in caplog.text
        db.engine.dispose()
