"""Deprovisioning over SCIM ends everything the user holds, at once, and sign-ins stay refused."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import ApiKey, AuditRecord, ExternalIdentity, ScimGroupMember, SsoProvider, Token, User
from tests.helpers import PASSWORD, HttpsClient, authorize, headers, signin
from tests.helpers import oidc_logout as oidc_logout_helpers
from tests.helpers.oidc_logout import claims_of, id_token
from tests.helpers.scim import GROUP_SCHEMA, Scim, assert_scim_error

# Back-channel receivers on loopback need the operator's setting: this module's app allows it.
app = oidc_logout_helpers.app

INSPECT = "/api/engine/v2/api_keys/inspect"


@pytest.fixture
def provisioner(app, world, rp):
    admin = world.user(rp.domain, "it-admin@example.com", admin=True)
    app.test_client_class = HttpsClient
    return Scim(app, app.test_client(), world.api_key(admin, scopes="scim"))


def signed_in_with_everything(client, rp, world):
    """The person signed in through the code flow: a session, tokens, an ID token's sid, and an API key."""
    signin(client)
    tokens = id_token(client, rp)
    person = world.query(select(User).where(User.email == "person@example.com"))[0]
    key = world.api_key(person, scopes="public")
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {tokens['access_token']}")).status_code == 200
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 200
    return tokens, key


def assert_everything_ended(client, rp, tokens, key, receiver, id_claims, world):
    # Inspect refuses the token on the very next request, and the API key too.
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {tokens['access_token']}")).status_code == 401
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 401
    # The browser's session cookie no longer signs anything in: authorize asks to sign in, no code.
    response = authorize(client, rp.app.client_id, scope="openid")
    assert "code=" not in response.headers.get("Location", "")
    refresh = client.post(
        "/auth/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
        headers=headers(),
        auth=(rp.app.client_id, rp.secret),
    )
    assert refresh.status_code in (400, 401)
    (received,) = receiver.wait()
    assert claims_of(client, received["form"]["logout_token"][0])["sid"] == id_claims["sid"]
    tokens_left = world.query(select(Token).where(Token.revoked_at.is_(None)))
    assert tokens_left == []
    (revoked,) = world.query(select(ApiKey).where(ApiKey.user_id == rp.person.id))
    assert revoked.revoked_at is not None
    refused = client.post(
        "/auth/signin", query_string={"email": "person@example.com", "password": PASSWORD}, headers=headers()
    )
    assert refused.status_code in (401, 403)


def test_patch_active_false_ends_sessions_tokens_and_keys_at_once(client, rp, receiver, provisioner, world):
    tokens, key = signed_in_with_everything(client, rp, world)
    id_claims = claims_of(client, tokens["id_token"])
    response = provisioner.patch(f"/Users/{rp.person.id}", [{"op": "replace", "path": "active", "value": False}])
    assert response.status_code == 200, response.get_json()
    assert_everything_ended(client, rp, tokens, key, receiver, id_claims, world)
    (record,) = world.query(select(AuditRecord).where(AuditRecord.event == "scim.user.deactivated"))
    assert record.actor == f"api_key:{provisioner.key.split('.')[0]}"
    assert record.details["revoked_api_keys"] == 1


def test_put_active_false_deprovisions_too(client, rp, receiver, provisioner, world):
    tokens, key = signed_in_with_everything(client, rp, world)
    id_claims = claims_of(client, tokens["id_token"])
    current = provisioner.get(f"/Users/{rp.person.id}").get_json()
    response = provisioner.put(f"/Users/{rp.person.id}", {**current, "active": False})
    assert response.status_code == 200, response.get_json()
    assert_everything_ended(client, rp, tokens, key, receiver, id_claims, world)


def test_delete_disables_unlinks_and_hides_the_user_but_keeps_the_row(client, rp, receiver, provisioner, world):
    tokens, key = signed_in_with_everything(client, rp, world)
    id_claims = claims_of(client, tokens["id_token"])
    provider = world.save(
        SsoProvider(
            id="corp",
            domain_id=rp.domain.id,
            name="corp",
            kind="oidc",
            client_id="c",
            client_secret_encrypted="x",
            scopes="openid",
        )
    )
    world.save(ExternalIdentity(provider_id=provider.id, user_id=rp.person.id, subject="corp-person"))
    member = {"schemas": [GROUP_SCHEMA], "displayName": "staff", "members": [{"value": str(rp.person.id)}]}
    group = provisioner.post("/Groups", member).get_json()
    assert provisioner.delete(f"/Users/{rp.person.id}").status_code == 204
    assert_everything_ended(client, rp, tokens, key, receiver, id_claims, world)
    assert_scim_error(provisioner.get(f"/Users/{rp.person.id}"), 404)
    assert provisioner.get(f"/Groups/{group['id']}").get_json().get("members") is None
    (user,) = world.query(select(User).where(User.id == rp.person.id))
    assert user.disabled and user.scim_deleted_at is not None
    # The SCIM group's role is gone; the roles from elsewhere stay with the record.
    assert user.groups == ["ops"]
    assert world.query(select(ScimGroupMember)) == []
    assert world.query(select(ExternalIdentity).where(ExternalIdentity.user_id == rp.person.id)) == []
    events = {r.event for r in world.query(select(AuditRecord).where(AuditRecord.event.like("scim.user.%")))}
    assert events == {"scim.user.deleted", "scim.user.deactivated"}


def test_a_deleted_user_can_be_provisioned_again(provisioner, rp, world):
    assert provisioner.delete(f"/Users/{rp.person.id}").status_code == 204
    created = provisioner.create_user("person@example.com")
    assert created["id"] == str(rp.person.id) and created["active"] is True


def test_hard_delete_removes_the_row_when_set(make_app, rp, world):
    app = make_app(AUTHSVC_SCIM_HARD_DELETE=True)
    admin = world.user(rp.domain, "it-admin@example.com", admin=True)
    app.test_client_class = HttpsClient
    hard = Scim(app, app.test_client(), world.api_key(admin, scopes="scim"))
    world.api_key(rp.person, scopes="public")
    assert hard.delete(f"/Users/{rp.person.id}").status_code == 204
    assert world.query(select(User).where(User.id == rp.person.id)) == []
    assert world.query(select(ApiKey).where(ApiKey.user_id == rp.person.id)) == []
    (record,) = world.query(select(AuditRecord).where(AuditRecord.event == "scim.user.deleted"))
    assert record.details["hard"] is True


def test_reactivating_lets_the_user_sign_in_again(client, rp, provisioner):
    provisioner.patch(f"/Users/{rp.person.id}", [{"op": "replace", "value": {"active": "False"}}])
    refused = client.post(
        "/auth/signin", query_string={"email": "person@example.com", "password": PASSWORD}, headers=headers()
    )
    assert refused.status_code in (401, 403)
    provisioner.patch(f"/Users/{rp.person.id}", [{"op": "replace", "value": {"active": "True"}}])
    signin(client)
