"""Who may use SCIM (the reserved `scim` scope), rate limits, the audit trail's actor."""

from __future__ import annotations

import base64

from sqlalchemy import select

from authsvc.core.models import Application, AuditRecord, Domain, User
from tests.helpers import OTHER_HOST, PASSWORD, headers
from tests.helpers.scim import SCIM, USER_SCHEMA, assert_scim_error


def client_credentials_token(client, app, secret: str, scope: str) -> str:
    basic = "Basic " + base64.b64encode(f"{app.client_id}:{secret}".encode()).decode()
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", "scope": scope},
        headers=headers(Authorization=basic),
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["access_token"]


def test_no_credential_is_401_in_scims_error_format(client, setup):
    response = client.get(f"{SCIM}/Users", headers=headers())
    assert_scim_error(response, 401)
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_an_unknown_key_is_401(scim):
    assert_scim_error(scim.get("/Users", key="0123456789abcdef.not-the-secret"), 401)


def test_an_admins_key_without_the_scim_scope_is_403(scim, world):
    key = world.api_key(scim.admin, scopes="public admin", permission="admin")
    assert_scim_error(scim.get("/Users", key=key), 403)


def test_a_key_with_the_scim_scope_of_a_user_who_is_not_an_admin_is_403(scim, world, setup):
    key = world.api_key(setup.person, scopes="scim")
    assert_scim_error(scim.get("/Users", key=key), 403)


def test_a_key_of_an_admin_who_was_demoted_stops_working(scim, world):
    assert scim.get("/Users").status_code == 200
    world.update(User, scim.admin.id, admin=False)
    assert_scim_error(scim.get("/Users"), 403)


def test_the_admin_api_refuses_a_scim_key_for_a_user_who_is_not_an_admin(client, scim, world, setup):
    admin_key = world.api_key(scim.admin, scopes="admin", permission="admin")
    response = client.post(
        "/api/engine/v2/api_keys",
        json={"user": "person@example.com", "name": "entra", "scopes": "scim"},
        headers=headers(**{"X-API-Key": admin_key}),
    )
    assert response.status_code == 422, response.get_json()
    assert "scopes" in response.get_data(as_text=True)
    response = client.post(
        "/api/engine/v2/api_keys",
        json={"user": "it-admin@example.com", "name": "entra", "scopes": "scim"},
        headers=headers(**{"X-API-Key": admin_key}),
    )
    assert response.status_code == 201, response.get_json()
    assert scim.get("/Users", key=response.get_json()["key"]).status_code == 200


def test_a_key_of_another_domain_is_401_here(scim, world):
    other = world.domain(OTHER_HOST)
    foreign_admin = world.user(other, "admin@other.example.com", admin=True)
    key = world.api_key(foreign_admin, scopes="scim")
    assert_scim_error(scim.get("/Users", key=key), 401)


def test_a_client_credentials_token_of_an_app_bound_to_an_admin_account_works(scim, client, world, setup):
    robot = world.user(setup.domain, "robot@example.com", admin=True, service_account=True)
    app, secret = world.application(
        setup.domain, confidential=True, service_account_id=robot.id, redirect_uris=[], scopes="public scim"
    )
    token = client_credentials_token(client, app, secret, "scim")
    response = scim.get("/Users", key=token)
    assert response.status_code == 200, response.get_json()
    scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": "new@example.com"}, key=token)
    actors = world.query(select(AuditRecord.actor).where(AuditRecord.event == "scim.user.created"))
    assert actors == [f"client:{app.client_id}"]


def test_a_token_of_an_app_bound_to_an_account_that_is_not_an_admin_is_403(scim, client, world, setup):
    app, secret = world.application(
        setup.domain, confidential=True, service_account_id=setup.service.id, redirect_uris=[], scopes="public scim"
    )
    token = client_credentials_token(client, app, secret, "scim")
    assert_scim_error(scim.get("/Users", key=token), 403)


def test_an_admins_own_code_flow_token_with_scim_is_403(scim, client, world, setup):
    world.update(Application, setup.public_app.id, scopes="public scim")
    world.update(User, scim.admin.id, service_account=True)
    response = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "it-admin@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
            "scope": "scim",
        },
        headers=headers(),
    )
    assert response.status_code == 200, response.get_json()
    # A token the admin holds through an application that is not bound to them: not a provisioning client.
    assert_scim_error(scim.get("/Users", key=response.get_json()["access_token"]), 403)


def test_every_write_is_audited_with_the_key_as_actor(scim, world):
    created = scim.create_user("ada@example.com")
    scim.patch(f"/Users/{created['id']}", [{"op": "replace", "path": "displayName", "value": "Ada"}])
    records = world.query(select(AuditRecord).where(AuditRecord.event.like("scim.%")).order_by(AuditRecord.id))
    key_id = scim.key.split(".")[0]
    assert [(r.event, r.actor, r.target) for r in records] == [
        ("scim.user.created", f"api_key:{key_id}", f"user:{created['id']}"),
        ("scim.user.patched", f"api_key:{key_id}", f"user:{created['id']}"),
    ]


def test_requests_are_rate_limited_per_credential_with_a_scim_error(make_app, setup, world):
    from tests.helpers.scim import Scim

    app = make_app(AUTHSVC_SCIM_RATE_LIMIT="3/minute")
    admin = world.user(setup.domain, "it-admin@example.com", admin=True)
    limited = Scim(app, app.test_client(), world.api_key(admin, scopes="scim"))
    statuses = [limited.get("/Users").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    body = assert_scim_error(limited.get("/Users"), 429, "tooMany")
    assert body["detail"]
    assert int(limited.get("/Users").headers["Retry-After"]) >= 1
    # Another key has its own count.
    other = Scim(app, app.test_client(), world.api_key(admin, scopes="scim"))
    assert other.get("/Users").status_code == 200


def test_the_domains_last_scim_activity_is_recorded(scim, world, setup):
    assert world.query(select(Domain.scim_last_activity).where(Domain.id == setup.domain.id)) == [None]
    scim.get("/Users")
    (moment,) = world.query(select(Domain.scim_last_activity).where(Domain.id == setup.domain.id))
    assert moment is not None and moment > 0
