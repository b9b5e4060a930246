"""A browser's session: signing out (of one session or all of them), its lifetime and what ends it,
and what another site's pages may not do with it (login CSRF, riding a cookie credential)."""

import time
from urllib.parse import parse_qs, urlsplit

import pytest

from authsvc.auth import sessions
from authsvc.core.models import Domain, User
from tests.helpers import HOST, PASSWORD, authorize, headers, signin
from tests.helpers.pages import INSPECT, csrf_token


def password_token(client, setup):
    return client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
    ).get_json()["access_token"]


# Sign-out


def test_logout_ends_the_session_deletes_the_cookie_and_revokes_a_presented_token(client, setup):
    signin(client)
    token = password_token(client, setup)
    response = client.get(
        "/auth/logout", query_string={"continue": "/auth/login?bye=1"}, headers=headers(Authorization=f"Bearer {token}")
    )
    assert response.status_code == 303
    assert response.headers["Location"] == "/auth/login?bye=1"
    assert any(h.startswith("user=;") for h in response.headers.getlist("Set-Cookie"))
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 401
    assert authorize(client, setup.public_app.client_id).status_code == 303


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
@pytest.mark.parametrize(
    "fetch",
    [
        {"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"},  # <img src=".../auth/logout">
        {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},  # fetch() from another site's script
        {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"},  # a hidden frame
    ],
)
def test_another_sites_page_cannot_sign_a_user_out_unseen(client, setup, site, fetch):
    signin(client)
    token = password_token(client, setup)
    client.set_cookie("bearer_token", token, domain=HOST)
    response = client.get("/auth/logout", headers=headers(**{"Sec-Fetch-Site": site, **fetch}))
    assert response.status_code == 403
    assert response.get_json()["error"] == "cross_site_request"
    assert "Set-Cookie" not in response.headers
    # The session and the token are untouched.
    assert authorize(client, setup.public_app.client_id).status_code == 302
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 200


@pytest.mark.parametrize(
    "fetch",
    [
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},
        {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},  # our own pages
    ],
)
def test_a_sign_out_link_or_our_own_page_still_signs_out(client, setup, fetch):
    signin(client)
    response = client.get("/auth/logout", headers=headers(**fetch))
    assert response.status_code == 303
    assert authorize(client, setup.public_app.client_id).status_code == 303


def test_logout_ignores_a_foreign_continue(client, setup):
    response = client.get("/auth/logout", query_string={"continue": "//evil.example.net"}, headers=headers())
    assert response.headers["Location"] == "/auth/login"


def test_logout_all_with_a_bearer_token_ends_every_session_and_token(client, setup, app):
    cookie_a = signin(client, "service@example.com")
    other = app.test_client()
    other.post(
        "/auth/signin",
        json={"email": "service@example.com", "password": PASSWORD},
        headers=headers(),
        base_url=f"https://{HOST}",
    )
    token = password_token(client, setup)
    second = password_token(client, setup)
    response = client.post("/auth/logout/all", headers=headers(Authorization=f"Bearer {token}"))
    assert response.status_code == 200
    assert response.get_json() == {"revoked_tokens": 2}
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {second}")).status_code == 401
    client.set_cookie("user", cookie_a, domain=HOST)
    assert authorize(client, setup.public_app.client_id).status_code == 303
    assert (
        other.get(
            "/auth/oauth/authorize",
            query_string={"response_type": "code", "client_id": setup.public_app.client_id},
            headers=headers(),
            base_url=f"https://{HOST}",
        ).status_code
        == 303
    )


@pytest.mark.parametrize("body", [b"[1]", b'{"csrf_token": 1}', b"{not json"])
def test_logout_all_with_the_session_reads_no_json_body(client, setup, body):
    signin(client)
    response = client.post("/auth/logout/all", data=body, content_type="application/json", headers=headers())
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"
    assert authorize(client, setup.public_app.client_id).status_code == 302, "still signed in"


def test_logout_all_with_the_session_needs_the_csrf_token(client, setup):
    signin(client)
    assert client.post("/auth/logout/all", headers=headers()).status_code == 400
    page = client.get("/auth/login", headers=headers())
    assert 'action="/auth/logout/all"' in page.get_data(as_text=True)
    response = client.post("/auth/logout/all", data={"csrf_token": csrf_token(page)}, headers=headers())
    assert response.status_code == 303
    assert authorize(client, setup.public_app.client_id).status_code == 303


# Session lifecycle


def test_a_domain_can_set_its_own_session_lifetime(client, setup, world, app):
    world.update(Domain, setup.domain.id, session_ttl=600)
    response = client.post(
        "/auth/signin", json={"email": "person@example.com", "password": PASSWORD}, headers=headers()
    )
    [cookie] = [h for h in response.headers.getlist("Set-Cookie") if h.startswith("user=")]
    assert "Max-Age=600" in cookie
    with app.app_context():
        from authsvc.core import store

        [key] = store.client().keys("authsvc:session:*")
        assert 590 <= store.client().ttl(key) <= 600


def test_sessions_of_a_disabled_user_are_refused(client, setup, world):
    signin(client)
    world.update(User, setup.person.id, disabled=True)
    assert authorize(client, setup.public_app.client_id).status_code == 303


def test_sessions_from_before_a_password_change_are_refused(client, setup, app):
    signin(client)
    with app.app_context():
        from authsvc.core.database import db

        user = db.session.get(User, setup.person.id)
        user.set_password("a new password")
        sessions.invalidate_sessions(user)
        db.session.commit()
    assert authorize(client, setup.public_app.client_id).status_code == 303
    time.sleep(0.01)
    signin(client, password="a new password")
    assert authorize(client, setup.public_app.client_id).status_code == 302


def test_samesite_none_for_iframes_requires_secure(make_app, setup, monkeypatch):
    app = make_app(AUTHSVC_COOKIE_SAMESITE="None")
    response = app.test_client().post(
        "/auth/signin",
        json={"email": "person@example.com", "password": PASSWORD},
        headers=headers(),
        base_url=f"https://{HOST}",
    )
    [cookie] = [h for h in response.headers.getlist("Set-Cookie") if h.startswith("user=")]
    assert "SameSite=None" in cookie and "Secure" in cookie
    from config import settings

    monkeypatch.setenv("AUTHSVC_COOKIE_SAMESITE", "None")
    monkeypatch.setenv("AUTHSVC_COOKIE_SECURE", "false")
    with pytest.raises(settings.ConfigError, match="requires AUTHSVC_COOKIE_SECURE"):
        settings.from_environment()


def test_no_session_redirect_keeps_the_whole_authorise_request(client, setup):
    response = authorize(client, setup.public_app.client_id, state="abc")
    back = parse_qs(urlsplit(response.headers["Location"]).query)["continue"][0]
    assert "state=abc" in back and "redirect_uri=" in back


@pytest.mark.parametrize(
    "extra",
    [
        {"Origin": "https://evil.example.net"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "null"},
        # The same host name is another origin on another scheme or port (a plain-http page, another service).
        {"Origin": f"http://{HOST}"},
        {"Origin": f"https://{HOST}:8443"},
        {"Origin": f"https://{HOST.upper()}:444"},
    ],
)
def test_a_sign_in_posted_by_another_sites_page_is_refused(client, setup, extra):
    # Login CSRF: a form on another site must not sign the browser in as someone else.
    response = client.post(
        "/auth/signin", data={"email": "person@example.com", "password": PASSWORD}, headers=headers(**extra)
    )
    assert response.status_code == 403
    assert response.get_json()["error"] == "cross_site_request"
    assert client.get_cookie("user", domain=HOST) is None


def test_same_site_pages_and_programmatic_clients_are_not_refused(client, setup):
    same = client.post(
        "/auth/signin",
        data={"email": "person@example.com", "password": PASSWORD},
        headers=headers(Origin=f"https://{HOST}", **{"Sec-Fetch-Site": "same-origin"}),
    )
    assert same.status_code == 202
    # The default port, written out, is the same origin.
    explicit = client.post(
        "/auth/signin",
        data={"email": "person@example.com", "password": PASSWORD},
        headers=headers(Origin=f"https://{HOST.upper()}:443"),
    )
    assert explicit.status_code == 202, explicit.get_json()
    assert (
        client.post(
            "/auth/signin", json={"email": "person@example.com", "password": PASSWORD}, headers=headers()
        ).status_code
        == 202
    )


def test_a_cookie_credential_cannot_be_ridden_from_another_site(client, setup):
    token = password_token(client, setup)
    client.set_cookie("bearer_token", token, domain=HOST)
    forged = client.post("/auth/logout/all", headers=headers(Origin="https://evil.example.net"))
    assert forged.status_code == 403
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 200


def test_the_token_endpoint_serves_applications_on_other_origins(client, setup):
    response = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
        },
        headers=headers(Origin="https://app.example.com", **{"Sec-Fetch-Site": "cross-site"}),
    )
    assert response.status_code == 200
