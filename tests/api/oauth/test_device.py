"""The device authorisation grant (RFC 8628): codes, the verification page, polling, lockouts, audit."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from authsvc.core import security, store
from authsvc.core.models import Application, AuditRecord, Token
from tests.helpers import HOST, HttpsClient, headers, signin
from tests.helpers.console import as_admin, new_application
from tests.helpers.device import DEVICE_GRANT, answer, poll, start
from tests.helpers.pages import csrf_token

USER_CODE = re.compile(r"^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$")


@pytest.fixture
def device_app(world, setup):
    application, _ = world.application(setup.domain, name="Lobby screen", device=True)
    return application


def enter(client, user_code: str) -> object:
    """Type ``user_code`` into the entry form and press Continue (the CSRF-protected POST that tries it)."""
    form = client.get("/auth/device", headers=headers())
    return client.post("/auth/device", data={"csrf_token": csrf_token(form), "user_code": user_code}, headers=headers())


def events(world, name: str) -> list[AuditRecord]:
    return world.query(select(AuditRecord).where(AuditRecord.event == name).order_by(AuditRecord.id))


def test_device_authorization_returns_the_codes_and_where_to_enter_them(app, client, device_app):
    response = start(client, device_app.client_id, scope="public mqtt.read")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert response.headers["Cache-Control"] == "no-store"
    assert USER_CODE.match(body["user_code"])
    assert body["verification_uri"] == f"https://{HOST}/auth/device"
    assert body["verification_uri_complete"] == f"https://{HOST}/auth/device?user_code={body['user_code']}"
    assert body["expires_in"] == 600
    assert body["interval"] == 5
    with app.app_context():
        redis = store.client()
        record_ttl = redis.ttl(f"authsvc:device:{security.digest(body['device_code'])}")
        user_code = body["user_code"].replace("-", "")
        user_code_ttl = redis.ttl(f"authsvc:device_user:{security.digest(user_code)}")
        # Only digests name the keys: the codes themselves are not in the store.
        assert redis.keys(f"*{body['device_code']}*") == []
    # The request outlives its expiry, to answer a late poll with expired_token.
    assert 600 < record_ttl <= 900
    assert 590 < user_code_ttl <= 600


def test_an_application_without_the_device_grant_is_unauthorized_client(client, setup):
    response = start(client, setup.public_app.client_id)
    assert response.status_code == 400
    assert response.get_json()["error"] == "unauthorized_client"


def test_a_scope_beyond_the_application_is_invalid_scope(client, device_app):
    response = start(client, device_app.client_id, scope="mqtt.write")
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_scope"


def test_a_confidential_device_application_must_authenticate(client, world, setup):
    application, secret = world.application(setup.domain, confidential=True, device=True)
    assert start(client, application.client_id).status_code == 401
    response = client.post(
        "/auth/oauth/device_authorization",
        data={"client_id": application.client_id, "client_secret": secret},
        headers=headers(),
    )
    assert response.status_code == 200
    assert USER_CODE.match(response.get_json()["user_code"])


def test_approval_gives_tokens_once_with_a_rotating_refresh_token(client, world, setup, device_app):
    body = start(client, device_app.client_id, scope="mqtt.read").get_json()
    pending = poll(client, device_app.client_id, body["device_code"])
    assert pending.status_code == 400
    assert pending.get_json()["error"] == "authorization_pending"
    signin(client)
    # Case and dashes do not matter.
    done = answer(client, body["user_code"].lower().replace("-", ""), "approve")
    assert done.status_code == 200
    assert "Device connected" in done.get_data(as_text=True)
    tokens = poll(client, device_app.client_id, body["device_code"])
    assert tokens.status_code == 200, tokens.get_json()
    token = tokens.get_json()
    assert token["scope"] == "mqtt.read"
    inspect = client.get(
        "/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token['access_token']}")
    )
    assert inspect.get_json()["u"]["e"] == "person@example.com"
    # Single use: the device code is spent.
    again = poll(client, device_app.client_id, body["device_code"])
    assert again.status_code == 400
    assert again.get_json()["error"] == "invalid_grant"
    refreshed = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": token["refresh_token"],
            "client_id": device_app.client_id,
        },
        headers=headers(),
    )
    assert refreshed.status_code == 200
    assert refreshed.get_json()["refresh_token"] != token["refresh_token"]
    rows = world.query(select(Token).where(Token.grant_type == DEVICE_GRANT))
    assert [row.user_id for row in rows] == [setup.person.id]
    (approved,) = events(world, "device.approved")
    assert approved.actor == f"user:{setup.person.id}"
    assert approved.target == f"client:{device_app.client_id}"
    issued = events(world, "token.issued")
    assert [e.details["grant_type"] for e in issued] == [DEVICE_GRANT]


def test_a_denied_request_answers_access_denied_and_is_audited(client, world, setup, device_app):
    body = start(client, device_app.client_id).get_json()
    signin(client)
    assert answer(client, body["user_code"], "deny").status_code == 200
    response = poll(client, device_app.client_id, body["device_code"])
    assert response.status_code == 400
    assert response.get_json()["error"] == "access_denied"
    assert len(events(world, "device.denied")) == 1
    # Answered: the code cannot be answered again.
    assert enter(client, body["user_code"]).status_code == 400


def test_polling_too_fast_slows_down_and_the_longer_interval_is_enforced(make_app, world, setup, clock):
    app = make_app(AUTHSVC_DEVICE_INTERVAL=1)
    app.test_client_class = HttpsClient
    client = app.test_client()
    application, _ = world.application(setup.domain, device=True)
    body = start(client, application.client_id).get_json()
    assert body["interval"] == 1
    assert poll(client, application.client_id, body["device_code"]).get_json()["error"] == "authorization_pending"
    assert poll(client, application.client_id, body["device_code"]).get_json()["error"] == "slow_down"
    # 1 s was the interval; it is now 6 s, so waiting the old interval is still too fast.
    clock.advance(1.2)
    assert poll(client, application.client_id, body["device_code"]).get_json()["error"] == "slow_down"
    with app.app_context():
        saved = json.loads(store.client().get(f"authsvc:device_poll:{security.digest(body['device_code'])}"))
    assert saved["interval"] == 11


def test_an_expired_code_answers_expired_token(make_app, world, setup, clock):
    app = make_app(AUTHSVC_DEVICE_CODE_TTL=1)
    app.test_client_class = HttpsClient
    client = app.test_client()
    application, _ = world.application(setup.domain, device=True)
    body = start(client, application.client_id).get_json()
    assert body["expires_in"] == 1
    clock.advance(1.2)
    response = poll(client, application.client_id, body["device_code"])
    assert response.status_code == 400
    assert response.get_json()["error"] == "expired_token"
    signin(client)
    assert enter(client, body["user_code"]).status_code == 400


def test_an_unknown_device_code_or_another_clients_is_refused(client, world, setup, device_app):
    other, _ = world.application(setup.domain, device=True)
    body = start(client, device_app.client_id).get_json()
    assert poll(client, device_app.client_id, "not-a-code").get_json()["error"] == "invalid_grant"
    assert poll(client, other.client_id, body["device_code"]).get_json()["error"] == "unauthorized_client"


def test_the_page_sends_a_signed_out_person_to_sign_in_and_back(client, device_app):
    response = client.get("/auth/device?user_code=BCDF-GHJK", headers=headers())
    assert response.status_code == 303
    assert response.headers["Location"] == "/auth/login?continue=%2Fauth%2Fdevice%3Fuser_code%3DBCDF-GHJK"


def test_the_page_shows_the_application_and_scopes_and_needs_the_csrf_token(client, device_app):
    body = start(client, device_app.client_id, scope="public mqtt.read").get_json()
    signin(client)
    entry = client.get("/auth/device", headers=headers())
    assert 'name="user_code"' in entry.get_data(as_text=True)
    shown = client.post(
        "/auth/device", data={"csrf_token": csrf_token(entry), "user_code": body["user_code"]}, headers=headers()
    )
    text = shown.get_data(as_text=True)
    assert "Allow Lobby screen on this device?" in text
    assert "<code>mqtt.read</code>" in text
    forged = client.post(
        "/auth/device/decision", data={"user_code": body["user_code"], "approve": "1"}, headers=headers()
    )
    assert forged.status_code == 400
    assert poll(client, device_app.client_id, body["device_code"]).get_json()["error"] == "authorization_pending"


def test_wrong_user_codes_lock_the_person_out_like_passwords(make_app, world, setup):
    app = make_app(AUTHSVC_LOCKOUT_THRESHOLD=3, AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD=100)
    app.test_client_class = HttpsClient
    client = app.test_client()
    application, _ = world.application(setup.domain, device=True)
    body = start(client, application.client_id).get_json()
    signin(client)
    for _ in range(3):
        assert enter(client, "BCDF-GHJK").status_code == 400
    locked = enter(client, body["user_code"])
    assert locked.status_code == 429
    assert int(locked.headers["Retry-After"]) > 0
    assert "Too many failed user code entries" in locked.get_data(as_text=True)
    (lock,) = events(world, "account.locked")
    assert lock.details["scope"] == "device-account"
    # The password sign-in of the account is not locked by it.
    signin(client)


def test_links_with_wrong_user_codes_neither_count_nor_lock_the_person_out(make_app, world, setup):
    app = make_app(AUTHSVC_LOCKOUT_THRESHOLD=3, AUTHSVC_DEVICE_VERIFY_RATE_LIMIT="3/minute")
    app.test_client_class = HttpsClient
    client = app.test_client()
    application, _ = world.application(setup.domain, name="Lobby screen", device=True)
    body = start(client, application.client_id).get_json()
    signin(client)
    # Cross-site navigations (verification_uri_complete links) with wrong codes: the form, filled in, and no lookup.
    for _ in range(6):
        link = client.get("/auth/device", query_string={"user_code": "BCDF-GHJK"}, headers=headers())
        assert link.status_code == 200
        text = link.get_data(as_text=True)
        assert 'value="BCDF-GHJK"' in text
        assert "Allow" not in text and "not valid" not in text
    assert events(world, "account.locked") == []
    # The person can still enter and approve a real code.
    shown = enter(client, body["user_code"])
    assert "Allow Lobby screen on this device?" in shown.get_data(as_text=True)
    assert answer(client, body["user_code"], "approve").status_code == 200
    assert poll(client, application.client_id, body["device_code"]).status_code == 200


def test_user_code_entries_are_rate_limited_per_address(make_app, world, setup):
    app = make_app(AUTHSVC_DEVICE_VERIFY_RATE_LIMIT="2/minute")
    app.test_client_class = HttpsClient
    client = app.test_client()
    signin(client)
    for _ in range(2):
        assert enter(client, "BCDFGHJK").status_code == 400
    assert enter(client, "BCDFGHJK").status_code == 429
    # Opening the entry form is not an attempt, with a code in the link or without.
    assert client.get("/auth/device", headers=headers()).status_code == 200
    assert client.get("/auth/device?user_code=BCDFGHJK", headers=headers()).status_code == 200


def test_metadata_advertises_the_device_endpoint_and_grant(client, setup):
    metadata = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert metadata["device_authorization_endpoint"] == f"https://{HOST}/auth/oauth/device_authorization"
    assert DEVICE_GRANT in metadata["grant_types_supported"]


def test_apps_create_with_device_allows_the_grant(client, runner, setup):
    result = runner.invoke(
        args=[
            "apps",
            "create",
            "--domain",
            HOST,
            "--name",
            "Kiosk",
            "--redirect-uri",
            "https://k.example.com/cb",
            "--device",
        ]
    )
    assert result.exit_code == 0, result.output
    created = json.loads(result.output)
    assert start(client, created["client_id"]).status_code == 200


def test_the_admin_api_sets_and_shows_the_device_flag(client, world, setup):
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes="public admin", permission="admin")
    response = client.post(
        "/api/engine/v2/oauth_apps",
        json={
            "domain": str(setup.domain.id),
            "name": "Panel",
            "redirect_uris": ["https://p.example.com/cb"],
            "device": True,
        },
        headers=headers(**{"X-API-Key": key}),
    )
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["device"] is True
    assert start(client, response.get_json()["client_id"]).status_code == 200


def test_the_console_creates_an_application_with_the_device_grant(client, world, setup):
    world.user(setup.domain, "admin@example.com", admin=True, name="Admin")
    as_admin(client)
    response = new_application(client, setup, name="Signage", device="y")
    assert response.status_code in (200, 303), response.get_data(as_text=True)[:300]
    (created,) = world.query(select(Application).where(Application.name == "Signage"))
    assert created.device is True
    assert start(client, created.client_id).status_code == 200
