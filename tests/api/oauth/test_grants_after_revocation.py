"""Nothing granted before a user's sessions are invalidated mints tokens after it.

A code not yet exchanged and a device approval not yet polled are grants the
user made through a session. When the user's password changes, an admin
revokes or disables the user (the admin API, SCIM), or the user ends every
session, the tokens are revoked and the sessions end; the grants still in the
store must end with them, or the next exchange or poll hands out fresh tokens
for up to the code's or device code's lifetime (docs/security.md#ending-what-a-user-holds).
"""

from __future__ import annotations

import threading

import pytest

from authsvc.oauth import device_page, pushed
from tests.helpers import PASSWORD, REDIRECT_URI, authorize, get_code, headers, location_params, signin
from tests.helpers.admin_api import call
from tests.helpers.device import answer, poll, start

INSPECT = "/api/engine/v2/api_keys/inspect"
NEW_PASSWORD = "a quite different passphrase 2026"


def _admin(client, keys, method: str, path: str, body=None) -> None:
    response = call(client, method, path, keys.admin_key, body)
    assert response.status_code == 200, response.get_json()


def _scim_active(scim, user_id: int, active: bool) -> None:
    response = scim.patch(f"/Users/{user_id}", [{"op": "replace", "path": "active", "value": active}])
    assert response.status_code == 200, response.get_json()


# Each event that ends what the user holds: (client, setup, keys, scim, the user's access token).
EVENTS = {
    "password changed by an admin": lambda c, s, k, sc, t: _admin(
        c, k, "patch", f"/users/{s.person.id}", {"password": NEW_PASSWORD}
    ),
    "tokens revoked by an admin": lambda c, s, k, sc, t: _admin(c, k, "post", f"/users/{s.person.id}/revoke"),
    "disabled by an admin": lambda c, s, k, sc, t: _admin(c, k, "patch", f"/users/{s.person.id}", {"disabled": True}),
    "disabled and enabled again by an admin": lambda c, s, k, sc, t: (
        _admin(c, k, "patch", f"/users/{s.person.id}", {"disabled": True}),
        _admin(c, k, "patch", f"/users/{s.person.id}", {"disabled": False}),
    ),
    "deactivated and reactivated by SCIM": lambda c, s, k, sc, t: (
        _scim_active(sc, s.person.id, False),
        _scim_active(sc, s.person.id, True),
    ),
    "every session ended by the user": lambda c, s, k, sc, t: _ok(
        c.post("/auth/logout/all", headers=headers(Authorization=f"Bearer {t}"))
    ),
}


def _ok(response) -> None:
    assert response.status_code == 200, response.get_json()


@pytest.fixture(params=sorted(EVENTS))
def event(request, client, setup, keys, scim):
    """Run one of the events on ``setup.person``, given an access token of theirs."""
    return lambda token: EVENTS[request.param](client, setup, keys, scim, token)


def _exchange(client, client_id: str, code: str):
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "client_id": client_id}
    return client.post("/auth/oauth/token", data=data, headers=headers())


def _refresh(client, client_id: str, refresh_token: str):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    return client.post("/auth/oauth/token", data=data, headers=headers())


def _tokens(client, setup) -> dict:
    """The person signs in and the public application gets tokens through a code."""
    signin(client)
    response = _exchange(client, setup.public_app.client_id, get_code(client, setup.public_app.client_id))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _invalid_grant(response) -> None:
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == "invalid_grant"
    assert "access_token" not in response.get_json()


def _everything_before_is_refused(client, setup, tokens: dict) -> None:
    _invalid_grant(_refresh(client, setup.public_app.client_id, tokens["refresh_token"]))
    inspected = client.get(INSPECT, headers=headers(Authorization=f"Bearer {tokens['access_token']}"))
    assert inspected.status_code == 401


def test_a_code_not_yet_exchanged_is_refused_after_the_event(client, setup, event):
    tokens = _tokens(client, setup)
    code = get_code(client, setup.public_app.client_id)
    event(tokens["access_token"])
    _invalid_grant(_exchange(client, setup.public_app.client_id, code))
    _everything_before_is_refused(client, setup, tokens)


def test_an_approved_device_code_is_refused_after_the_event(client, world, setup, event):
    device_app, _ = world.application(setup.domain, name="Lobby screen", device=True)
    tokens = _tokens(client, setup)
    started = start(client, device_app.client_id).get_json()
    assert answer(client, started["user_code"], "approve").status_code == 200
    event(tokens["access_token"])
    _invalid_grant(poll(client, device_app.client_id, started["device_code"]))
    _everything_before_is_refused(client, setup, tokens)


@pytest.mark.parametrize("grant", ["code", "device approval"])
def test_a_grant_saved_just_after_a_concurrent_revocation_is_refused(
    app, client, world, setup, keys, clock, monkeypatch, grant
):
    """A grant is dated by the start of the session it was made through, not by the moment it was saved: a
    revocation that commits while the request runs (after it checked the session, before it saved the code or
    the approval) must void it as well, or the grant outlives the revocation that was meant to end it."""
    device_app, _ = world.application(setup.domain, name="Lobby screen", device=True)
    signin(client)
    revoked: list[int] = []

    def revoke_meanwhile(step):
        """``step`` of the request (between its check of the session and its save), a revocation committing first."""

        def stepping(*args, **kwargs):
            def revoke() -> None:
                revoker = app.test_client()
                revoked.append(call(revoker, "post", f"/users/{setup.person.id}/revoke", keys.admin_key).status_code)

            other_request = threading.Thread(target=revoke)
            other_request.start()
            other_request.join(10)
            clock.advance(1)  # the save comes after the revocation's watermark
            return step(*args, **kwargs)

        return stepping

    if grant == "code":
        # The first step of saving a code: spending the pushed request it came from, if any.
        monkeypatch.setattr(pushed, "spend", revoke_meanwhile(pushed.spend))
        code = get_code(client, setup.public_app.client_id)
        assert revoked == [200]
        _invalid_grant(_exchange(client, setup.public_app.client_id, code))
    else:
        started = start(client, device_app.client_id).get_json()
        monkeypatch.setattr(device_page, "decide", revoke_meanwhile(device_page.decide))
        assert answer(client, started["user_code"], "approve").status_code == 200
        assert revoked == [200]
        _invalid_grant(poll(client, device_app.client_id, started["device_code"]))


def test_what_is_granted_after_the_event_is_honoured(client, setup, keys):
    """The watermark voids earlier grants only: signing in again with the new password works at once."""
    _tokens(client, setup)
    _admin(client, keys, "patch", f"/users/{setup.person.id}", {"password": NEW_PASSWORD})
    signin(client, password=NEW_PASSWORD)
    response = _exchange(client, setup.public_app.client_id, get_code(client, setup.public_app.client_id))
    assert response.status_code == 200, response.get_json()


def test_the_password_grant_asks_again_and_its_refresh_token_ends_with_the_rest(client, setup, keys):
    """The password grant holds no grant between requests: each asks for the password, which the event may
    have changed; the refresh token it gave ends like any other."""
    client_id = setup.confidential_app.client_id
    auth = (client_id, setup.client_secret)

    def password_grant(password: str):
        data = {"grant_type": "password", "username": setup.service.email, "password": password}
        return client.post("/auth/oauth/token", data=data, headers=headers(), auth=auth)

    issued = password_grant(PASSWORD)
    assert issued.status_code == 200, issued.get_json()
    _admin(client, keys, "patch", f"/users/{setup.service.id}", {"password": NEW_PASSWORD})
    data = {"grant_type": "refresh_token", "refresh_token": issued.get_json()["refresh_token"]}
    _invalid_grant(client.post("/auth/oauth/token", data=data, headers=headers(), auth=auth))
    _invalid_grant(password_grant(PASSWORD))
    assert password_grant(NEW_PASSWORD).status_code == 200


def test_what_a_deleted_user_was_granted_is_no_grant_of_a_user_made_after(client, world, setup, keys):
    """The deleted user's session, code and device approval name its id, and must not become the sign-in or
    tokens of a user made after: ids are never given twice (tests/api/platform/test_ids_never_reused.py), and
    the watermark of a new user starts at its creation should one ever come back (a database restored)."""
    device_app, _ = world.application(setup.domain, name="Lobby screen", device=True)
    leaving = call(client, "post", "/users", keys.admin_key, {"email": "leaving@example.com", "password": PASSWORD})
    assert leaving.status_code in (200, 201), leaving.get_json()
    leaving_id = leaving.get_json()["id"]
    signin(client, "leaving@example.com")
    code = get_code(client, setup.public_app.client_id)
    started = start(client, device_app.client_id).get_json()
    assert answer(client, started["user_code"], "approve").status_code == 200
    assert call(client, "delete", f"/users/{leaving_id}", keys.admin_key).status_code in (200, 204)

    arriving = call(client, "post", "/users", keys.admin_key, {"email": "arriving@example.com", "password": PASSWORD})
    assert arriving.status_code in (200, 201), arriving.get_json()
    _invalid_grant(_exchange(client, setup.public_app.client_id, code))
    _invalid_grant(poll(client, device_app.client_id, started["device_code"]))
    # The deleted user's cookie signs nobody in: the authorisation endpoint asks for a sign-in.
    asked = authorize(client, setup.public_app.client_id)
    assert "code" not in location_params(asked), asked.headers.get("Location")
