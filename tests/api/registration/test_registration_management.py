"""Managing a dynamic client registration (RFC 7592): reading, updating and deleting it with the
registration access token, and who may not."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import Application, AuditRecord
from tests.helpers import REDIRECT_URI, get_code, headers, pkce_pair
from tests.helpers.client_registration import METADATA, REGISTER, manage, register, stored
from tests.helpers.pages import INSPECT


@pytest.fixture
def registered(client, issue):
    """A confidential client, registered: the 201 answer's body."""
    _, value = issue()
    response = register(client, value)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_reading_a_registration_answers_its_metadata_without_the_secret(client, registered):
    response = manage(client, "get", registered)
    assert response.status_code == 200
    body = response.get_json()
    assert response.headers["Cache-Control"] == "no-store"
    assert "client_secret" not in body
    for name in ("client_id", "client_name", "redirect_uris", "scope", "grant_types", "registration_client_uri"):
        assert body[name] == registered[name]
    assert body["registration_access_token"] == registered["registration_access_token"]


def test_an_update_replaces_the_whole_registration(client, world, registered):
    update = {
        "client_id": registered["client_id"],
        "redirect_uris": ["https://app.example.com/other"],
        "scope": "mqtt.read",
        "grant_types": ["authorization_code", "refresh_token"],
    }
    response = manage(client, "put", registered, json=update)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["redirect_uris"] == ["https://app.example.com/other"]
    assert body["scope"] == "mqtt.read"
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    # Left out, so back to the defaults: the name is the client id, the method client_secret_basic.
    assert body["client_name"] == registered["client_id"]
    application = stored(world, registered["client_id"])
    assert application.redirect_uris == ["https://app.example.com/other"]
    # The same secret still authenticates: it was not sent, and not changed.
    assert application.client_secret_digest == security.digest(registered["client_secret"])
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "application.updated"))
    assert record.actor == f"client:{registered['client_id']}"


def test_an_update_to_a_public_client_drops_the_secret_and_back_issues_a_new_one(client, world, registered):
    base = {"client_id": registered["client_id"], "redirect_uris": [REDIRECT_URI]}
    public = manage(client, "put", registered, json=base | {"token_endpoint_auth_method": "none"}).get_json()
    assert "client_secret" not in public
    assert stored(world, registered["client_id"]).client_secret_digest is None
    assert stored(world, registered["client_id"]).require_pkce is True, "a public client needs PKCE"
    again = manage(client, "put", registered, json=base | {"token_endpoint_auth_method": "client_secret_post"})
    secret = again.get_json()["client_secret"]
    assert secret != registered["client_secret"]
    assert stored(world, registered["client_id"]).client_secret_digest == security.digest(secret)


@pytest.mark.parametrize(
    "update,error",
    [
        ({"redirect_uris": [REDIRECT_URI]}, "invalid_request"),  # RFC 7592 2.2: client_id is required
        ({"client_id": "someone-else", "redirect_uris": [REDIRECT_URI]}, "invalid_request"),
        ({"client_id": "OWN", "client_secret": "wrong", "redirect_uris": [REDIRECT_URI]}, "invalid_request"),
        ({"client_id": "OWN", "registration_access_token": "x", "redirect_uris": [REDIRECT_URI]}, "invalid_request"),
        ({"client_id": "OWN", "client_id_issued_at": 1, "redirect_uris": [REDIRECT_URI]}, "invalid_request"),
        ({"client_id": "OWN", "redirect_uris": ["http://evil.example.com/"]}, "invalid_redirect_uri"),
        ({"client_id": "OWN", "redirect_uris": [REDIRECT_URI], "scope": "admin"}, "invalid_client_metadata"),
    ],
)
def test_an_invalid_update_is_refused_and_changes_nothing(client, world, registered, update, error):
    if update.get("client_id") == "OWN":
        update = update | {"client_id": registered["client_id"]}
    response = manage(client, "put", registered, json=update | {"client_name": "Changed"})
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == error
    application = stored(world, registered["client_id"])
    assert application.redirect_uris == [REDIRECT_URI] and application.name == "Partner app"


def test_deleting_a_registration_removes_the_client_and_revokes_its_tokens(client, world, issue, setup_person):
    _, value = issue()
    body = register(client, value, METADATA | {"token_endpoint_auth_method": "none"}).get_json()
    world.update(Application, stored(world, body["client_id"]).id, consent=False)
    verifier, challenge = pkce_pair()
    code = get_code(client, body["client_id"], code_challenge=challenge, code_challenge_method="S256")
    token = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": body["client_id"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        },
        headers=headers(),
    ).get_json()["access_token"]
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 200
    response = manage(client, "delete", body)
    assert response.status_code == 204 and response.data == b""
    assert stored(world, body["client_id"]) is None
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 401
    assert manage(client, "get", body).status_code == 401
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "application.deleted"))
    assert record.details["before"]["revoked_tokens"] == 1


def test_a_wrong_or_another_clients_token_is_401_for_every_method(client, world, issue):
    _, value = issue(max_uses=2)
    first = register(client, value).get_json()
    second = register(client, value).get_json()
    for method in ("get", "put", "delete"):
        for token in ("wrong", second["registration_access_token"], first["client_secret"]):
            response = manage(client, method, first, token=token, json={"client_id": first["client_id"]})
            assert response.status_code == 401, (method, response.get_json())
            assert response.get_json()["error"] == "invalid_token"
            assert "WWW-Authenticate" in response.headers
    assert stored(world, first["client_id"]) is not None


def test_an_application_an_admin_created_cannot_be_managed_by_registration(client, world, domain):
    application, _ = world.application(domain)
    response = client.get(f"{REGISTER}/{application.client_id}", headers=headers(Authorization="Bearer anything"))
    assert response.status_code == 401
