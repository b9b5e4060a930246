"""The account page's API for single-page apps: /api/engine/v2/me, /me/sessions, /me/applications.

The caller is the user of the session cookie, or of an access token issued to them with ``openid``;
an API key, or a token without ``openid``, is refused 403 ``insufficient_scope``. Errors are the
API's JSON. A DELETE riding on the cookie from another origin's page is refused, as every
cookie-borne write is.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord
from tests.helpers import HOST, OIDC_SCOPES, REDIRECT_URI, HttpsClient, get_code, headers, signin
from tests.helpers.pages import INSPECT

ME = "/api/engine/v2/me"
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"


@pytest.fixture
def people(world):
    class People:
        domain = world.domain(scopes=OIDC_SCOPES)
        app, secret = world.application(domain, confidential=True, scopes=OIDC_SCOPES, name="Dashboard")
        person = world.user(domain, "person@example.com", name="Person")
        admin = world.user(domain, "admin@example.com", admin=True)
        key = world.api_key(admin, scopes="public openid admin", permission="admin")

    return People


def browser(app, agent: str = FIREFOX) -> HttpsClient:
    app.test_client_class = HttpsClient
    client = app.test_client()
    client.environ_base["HTTP_USER_AGENT"] = agent
    return client


def token(client, people, scope: str) -> str:
    code = get_code(client, people.app.client_id, scope=scope)
    answer = client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        auth=(people.app.client_id, people.secret),
        headers=headers(),
    )
    return answer.get_json()["access_token"]


def bearer(value: str) -> dict:
    return headers(Authorization=f"Bearer {value}")


def test_me_answers_the_session_cookies_user(app, client, people):
    signin(client)
    answer = client.get(ME, headers=headers())
    assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-store"
    body = answer.get_json()
    assert body["id"] == str(people.person.id) and body["email"] == "person@example.com"
    assert body["name"] == "Person" and body["email_verified"] is True and body["pending_email"] is None
    assert body["has_password"] is True and body["factors"] == []


def test_me_answers_an_access_token_with_openid_of_the_user(app, people):
    signing = browser(app)
    signin(signing)
    access = token(signing, people, "openid")
    stranger = browser(app)
    answer = stranger.get(ME, headers=bearer(access))
    assert answer.status_code == 200 and answer.get_json()["email"] == "person@example.com"


@pytest.mark.parametrize("scope", ["public", "profile email"])
def test_a_token_without_openid_is_refused(app, client, people, scope):
    signin(client)
    access = token(client, people, scope)
    refused = browser(app).get(ME, headers=bearer(access))
    assert refused.status_code == 403 and refused.get_json()["error"] == "insufficient_scope"


def test_an_api_key_is_not_the_users_own_credential(app, people):
    refused = browser(app).get(ME, headers=headers(**{"X-API-Key": people.key}))
    assert refused.status_code == 403 and refused.get_json()["error"] == "insufficient_scope"


@pytest.mark.parametrize("path", [ME, f"{ME}/sessions", f"{ME}/applications"])
def test_without_a_session_or_token_the_answer_is_401_json(app, client, people, path):
    answer = client.get(path, headers=headers())
    assert answer.status_code == 401 and answer.get_json()["error"] == "login_required"
    forged = client.get(path, headers=bearer("not-a-token"))
    assert forged.status_code == 401 and forged.get_json()["error"] == "invalid_token"


def test_sessions_are_listed_with_device_address_method_and_times(app, people):
    laptop, phone = browser(app), browser(app, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1")
    signin(laptop)
    signin(phone)
    listed = laptop.get(f"{ME}/sessions", headers=headers()).get_json()["sessions"]
    assert len(listed) == 2
    by_device = {s["device"]: s for s in listed}
    assert set(by_device) == {"Firefox on Linux", "Safari on iOS"}
    mine = by_device["Firefox on Linux"]
    assert mine["current"] is True and by_device["Safari on iOS"]["current"] is False
    assert mine["address"] == "127.0.0.1" and mine["method"] == "password" and mine["amr"] == ["pwd"]
    assert mine["signed_in_at"] > 0 and mine["last_seen_at"] >= mine["signed_in_at"]
    assert mine["user_agent"] == FIREFOX


def test_deleting_a_session_ends_it(app, people, world):
    laptop, phone = browser(app), browser(app)
    signin(laptop)
    signin(phone)
    listed = laptop.get(f"{ME}/sessions", headers=headers()).get_json()["sessions"]
    [other] = [s for s in listed if not s["current"]]
    ended = laptop.delete(f"{ME}/sessions/{other['id']}", headers=headers())
    assert ended.status_code == 200 and ended.get_json() == {"id": other["id"], "ended": True}
    assert phone.get(ME, headers=headers()).status_code == 401
    assert laptop.get(ME, headers=headers()).status_code == 200
    assert len(world.query(select(AuditRecord).where(AuditRecord.event == "session.ended"))) == 1
    again = laptop.delete(f"{ME}/sessions/{other['id']}", headers=headers())
    assert again.status_code == 404 and again.get_json()["error"] == "not_found"


def test_another_users_session_cannot_be_named(app, people, world):
    world.user(people.domain, "other@example.com")
    mine, theirs = browser(app), browser(app)
    signin(mine)
    signin(theirs, "other@example.com")
    [their_session] = theirs.get(f"{ME}/sessions", headers=headers()).get_json()["sessions"]
    refused = mine.delete(f"{ME}/sessions/{their_session['id']}", headers=headers())
    assert refused.status_code == 404
    assert theirs.get(ME, headers=headers()).status_code == 200


def test_a_delete_on_the_cookie_from_another_sites_page_is_refused(app, people):
    laptop, phone = browser(app), browser(app)
    signin(laptop)
    signin(phone)
    [other] = [s for s in laptop.get(f"{ME}/sessions", headers=headers()).get_json()["sessions"] if not s["current"]]
    forged = laptop.delete(f"{ME}/sessions/{other['id']}", headers=headers(Origin="https://evil.example"))
    assert forged.status_code == 403 and forged.get_json()["error"] == "cross_site_request"
    assert phone.get(ME, headers=headers()).status_code == 200
    same = laptop.delete(f"{ME}/sessions/{other['id']}", headers=headers(Origin=f"https://{HOST}"))
    assert same.status_code == 200


def test_a_token_ends_a_session_of_its_user(app, people):
    laptop = browser(app)
    signin(laptop)
    access = token(laptop, people, "openid")
    spa = browser(app)
    [session] = spa.get(f"{ME}/sessions", headers=bearer(access)).get_json()["sessions"]
    assert session["current"] is False, "a token has no session of its own"
    assert spa.delete(f"{ME}/sessions/{session['id']}", headers=bearer(access)).status_code == 200
    assert laptop.get(ME, headers=headers()).status_code == 401


def test_applications_are_listed_and_disconnecting_one_revokes_its_tokens(app, people):
    laptop = browser(app)
    signin(laptop)
    access = token(laptop, people, "openid profile")
    [listed] = laptop.get(f"{ME}/applications", headers=headers()).get_json()["applications"]
    assert listed["client_id"] == people.app.client_id and listed["name"] == "Dashboard"
    assert listed["scopes"] == ["openid", "profile"] and listed["approved_at"] is None and listed["since"] > 0
    gone = laptop.delete(f"{ME}/applications/{people.app.client_id}", headers=headers())
    assert gone.status_code == 200 and gone.get_json() == {"client_id": people.app.client_id, "revoked_tokens": 1}
    assert laptop.get(INSPECT, headers=bearer(access)).status_code == 401
    assert laptop.get(f"{ME}/applications", headers=headers()).get_json()["applications"] == []
    unknown = laptop.delete(f"{ME}/applications/{people.app.client_id}", headers=headers())
    assert unknown.status_code == 404 and unknown.get_json()["error"] == "not_found"


@pytest.mark.parametrize("client_id", ["nope", "a%00b", "x" * 300])
def test_an_unknown_application_is_a_404_never_a_500(app, client, people, client_id):
    signin(client)
    answer = client.delete(f"{ME}/applications/{client_id}", headers=headers())
    assert answer.status_code == 404 and answer.get_json()["error"] == "not_found"
