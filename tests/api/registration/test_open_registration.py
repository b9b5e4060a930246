"""Open dynamic client registration: a domain that has it registers clients without an initial access token
(RFC 7591 3, as MCP clients register), asks the user every time such a client asks, and counts registrations
per address.
"""

from __future__ import annotations

import json

from sqlalchemy import select

from authsvc.core.models import Application, AuditRecord, Domain
from tests.helpers import HOST, REDIRECT_URI, authorize, headers, location_params, pkce_pair
from tests.helpers.client_registration import METADATA, REGISTER, register, stored
from tests.helpers.console import as_admin, get, text
from tests.helpers.pages import csrf_token
from tests.helpers.sso import api

PUBLIC = METADATA | {"token_endpoint_auth_method": "none"}


def register_openly(client, metadata=None, **kwargs):
    return client.post(REGISTER, json=PUBLIC if metadata is None else metadata, headers=headers(), **kwargs)


def test_without_open_registration_a_client_needs_an_initial_access_token(client, world, domain):
    response = register_openly(client)
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert world.query(select(Application)) == []


def test_with_open_registration_a_client_registers_without_a_token(client, world, domain):
    world.update(Domain, domain.id, open_registration=True)
    response = register_openly(client)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert "client_secret" not in body and body["token_endpoint_auth_method"] == "none"
    assert body["registration_client_uri"] == f"https://{HOST}{REGISTER}/{body['client_id']}"
    application = stored(world, body["client_id"])
    assert application.openly_registered and application.registration_token_id is None
    assert application.consent and application.require_pkce
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "application.registered"))
    assert record.actor == "open_registration"
    # Its registration is managed with the registration access token it got, as any other's.
    read = client.get(
        f"{REGISTER}/{body['client_id']}", headers=headers(Authorization=f"Bearer {body['registration_access_token']}")
    )
    assert read.status_code == 200 and read.get_json()["client_name"] == "Partner app"


def test_an_openly_registered_confidential_client_gets_a_secret(client, world, domain):
    """RFC 7591 2: a client that asks for a secret method is given a secret; it is confidential."""
    world.update(Domain, domain.id, open_registration=True)
    body = register_openly(client, METADATA | {"token_endpoint_auth_method": "client_secret_basic"}).get_json()
    assert body["client_secret"] and body["client_secret_expires_at"] == 0
    assert stored(world, body["client_id"]).confidential


def test_a_token_presented_is_still_checked_under_open_registration(client, world, domain):
    world.update(Domain, domain.id, open_registration=True)
    response = register(client, "not-a-token", PUBLIC)
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"
    assert world.query(select(Application)) == []


def test_an_openly_registered_client_gets_the_consent_page_every_time(client, world, domain, setup_person):
    """Nobody vouched for the client: an approval is never taken as given for the next request."""
    world.update(Domain, domain.id, open_registration=True)
    client_id = register_openly(client).get_json()["client_id"]
    _, challenge = pkce_pair()
    ask = {"code_challenge": challenge, "code_challenge_method": "S256"}
    page = authorize(client, client_id, **ask)
    assert page.status_code == 200
    assert "Partner app" in page.get_data(as_text=True)
    approved = client.post(
        page.request.full_path, data={"csrf_token": csrf_token(page), "approve": "1"}, headers=headers()
    )
    assert approved.status_code == 302, approved.get_data(as_text=True)
    assert approved.headers["Location"].startswith(REDIRECT_URI) and "code" in location_params(approved)
    assert authorize(client, client_id, **ask).status_code == 200


def test_registrations_count_per_address_in_a_rate_of_their_own(make_app, world):
    from tests.helpers import HttpsClient

    app = make_app(AUTHSVC_REGISTRATION_RATE_LIMIT="2/minute")
    app.test_client_class = HttpsClient
    client = app.test_client()
    domain = world.domain()
    world.update(Domain, domain.id, open_registration=True)
    assert [register_openly(client).status_code for _ in range(3)] == [201, 201, 429]
    assert register_openly(client, environ_base={"REMOTE_ADDR": "192.0.2.9"}).status_code == 201
    assert len(world.query(select(Application))) == 3


def test_an_admin_turns_open_registration_on_in_the_admin_api(client, world, domain):
    admin = world.user(domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes="public admin", permission="admin")
    assert api(client, "get", f"/domains/{domain.id}", key).get_json()["open_registration"] is False
    changed = api(client, "patch", f"/domains/{domain.id}", key, {"open_registration": True})
    assert changed.status_code == 200 and changed.get_json()["open_registration"] is True
    assert register_openly(client).status_code == 201
    bad = api(client, "patch", f"/domains/{domain.id}", key, {"open_registration": "sometimes"})
    assert bad.status_code == 422 and "open_registration" in bad.get_data(as_text=True)


def test_the_cli_turns_open_registration_on_and_off(runner, world, domain):
    result = runner.invoke(args=["domains", "update", "--domain", HOST, "--open-registration", "on"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["open_registration"] is True
    assert world.query(select(Domain))[0].open_registration is True
    result = runner.invoke(args=["domains", "update", "--domain", HOST, "--open-registration", "off"])
    assert json.loads(result.stdout)["open_registration"] is False
    assert runner.invoke(args=["domains", "update", "--domain", HOST, "--open-registration", "yes"]).exit_code != 0


def test_the_console_marks_an_openly_registered_application(client, world, domain):
    world.update(Domain, domain.id, open_registration=True)
    world.user(domain, "admin@example.com", admin=True, name="Admin")
    client_id = register_openly(client).get_json()["client_id"]
    as_admin(client)
    applications = text(get(client, f"/domains/{domain.id}/applications"))
    assert "without an initial access token (open registration)" in applications
    [application] = world.query(select(Application).where(Application.client_id == client_id))
    detail = text(get(client, f"/domains/{domain.id}/applications/{application.id}"))
    assert 'id="registered"' in detail and "open registration" in detail


def test_the_consent_page_marks_an_openly_registered_clients_name_and_logo_as_not_verified(
    client, world, domain, setup_person, issue
):
    """Whoever registered openly chose the name and the logo: the consent page says neither is verified and names
    the host the answer goes to, as for a metadata document's client. A client registered with an admin's initial
    access token gets no such warning."""
    world.update(Domain, domain.id, open_registration=True)
    _, challenge = pkce_pair()
    ask = {"code_challenge": challenge, "code_challenge_method": "S256"}
    openly = register_openly(client, PUBLIC | {"logo_uri": "https://logos.example.net/l.png"}).get_json()
    text = authorize(client, openly["client_id"], **ask).get_data(as_text=True)
    assert 'id="unverified-client"' in text
    assert "The name <strong>Partner app</strong> was given by whoever registered the application" in text
    assert "<strong>not verified</strong>: your answer goes to <strong>app.example.com</strong>" in text
    assert "names a logo at logos.example.net: not verified" in text
    _, token = issue()
    vouched = register(client, token, PUBLIC).get_json()
    text = authorize(client, vouched["client_id"], **ask).get_data(as_text=True)
    assert "Partner app" in text and 'id="unverified-client"' not in text
