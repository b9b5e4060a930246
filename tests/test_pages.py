"""Browser sign-in (GET/POST /auth/login), consent, sign-out and the session lifecycle."""

import json
import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from authsvc.accounts import sessions
from authsvc.core.models import Consent, Domain, User
from tests.conftest import HOST, PASSWORD, REDIRECT_URI, authorize, headers, location_params, signin

INSPECT = "/api/engine/v2/api_keys/inspect"


def csrf_token(response) -> str:
    match = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', response.get_data(as_text=True))
    assert match, "the page has no CSRF token"
    return match.group(1)


def login_page(client, next_url="/auth/oauth/authorize?client_id=x"):
    return client.get("/auth/login", query_string={"continue": next_url}, headers=headers())


def submit_login(client, email="person@example.com", password=PASSWORD, next_url="", token=None):
    page = login_page(client, next_url)
    data = {
        "csrf_token": token if token is not None else csrf_token(page),
        "email": email,
        "password": password,
        "continue": next_url,
    }
    return client.post("/auth/login", data=data, headers=headers())


def test_sign_in_page_has_the_form_and_keeps_continue(client, setup):
    response = login_page(client, "/auth/oauth/authorize?client_id=abc")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    html = response.get_data(as_text=True)
    assert 'action="/auth/login"' in html
    assert 'name="email"' in html and 'name="password"' in html
    assert 'name="continue" type="hidden" value="/auth/oauth/authorize?client_id=abc"' in html


def test_sign_in_pages_cannot_be_framed_cached_or_leak_a_referrer(client, setup):
    response = login_page(client)
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] in ("no-referrer", "same-origin")


def test_a_good_sign_in_sets_the_session_and_goes_to_continue(client, setup):
    response = submit_login(client, next_url="/auth/oauth/authorize?client_id=abc")
    assert response.status_code == 303
    assert response.headers["Location"] == "/auth/oauth/authorize?client_id=abc"
    assert client.get_cookie("user", domain=HOST) is not None


def test_a_failed_sign_in_says_so_on_the_page_and_keeps_continue(client, setup):
    response = submit_login(client, password="wrong password", next_url="/auth/oauth/authorize?client_id=abc")
    assert response.status_code == 401
    html = response.get_data(as_text=True)
    assert "The e-mail address or password is incorrect." in html
    assert 'value="/auth/oauth/authorize?client_id=abc"' in html
    assert 'value="person@example.com"' in html
    assert client.get_cookie("user", domain=HOST) is None


def test_the_form_refuses_a_missing_or_wrong_csrf_token(client, setup):
    for token in ("", "forged"):
        response = submit_login(client, token=token)
        assert response.status_code == 400
        assert "The form expired" in response.get_data(as_text=True)
        assert client.get_cookie("user", domain=HOST) is None


@pytest.mark.parametrize("email", ["a\x00b@example.com", "person@example.com\x00", "x\x1f@example.com"])
def test_control_characters_in_the_forms_email_are_a_400_page(client, setup, email):
    """NUL reached PostgreSQL (which refuses it) and was a 500."""
    response = submit_login(client, email=email)
    assert response.status_code == 400
    assert response.mimetype == "text/html"
    assert "Enter your e-mail address and password." in response.get_data(as_text=True)
    assert client.get_cookie("user", domain=HOST) is None


@pytest.mark.parametrize("body", [b"[1, 2]", b'"a string"', b'{"email": 1, "password": ["x"]}', b"{not json", None])
def test_the_form_reads_no_json_body(client, setup, body):
    """Flask-WTF read a JSON body as the form: values that are not strings were a 500."""
    page = login_page(client)
    if body is None:  # a well-formed one, CSRF token and all, is no submission either
        body = json.dumps({"csrf_token": csrf_token(page), "email": "person@example.com", "password": PASSWORD})
    response = client.post("/auth/login", data=body, content_type="application/json", headers=headers())
    assert response.status_code == 400
    assert response.mimetype == "text/html"
    assert client.get_cookie("user", domain=HOST) is None


def test_a_foreign_continue_is_dropped_from_the_form(client, setup):
    response = login_page(client, "https://evil.example.net/")
    assert "evil.example.net" not in response.get_data(as_text=True)
    assert submit_login(client, next_url="https://evil.example.net/").headers["Location"] == "/auth/login"


def test_signed_in_user_sees_who_they_are(client, setup):
    signin(client)
    response = client.get("/auth/login", headers=headers())
    assert "person@example.com" in response.get_data(as_text=True)


def test_programmatic_signin_needs_no_csrf_token(client, setup):
    signin(client)
    assert client.get_cookie("user", domain=HOST) is not None


# Consent


@pytest.fixture
def consent_app(world, setup):
    application, _ = world.application(setup.domain, consent=True, name="Room booking")
    return application


def test_a_consent_application_shows_a_page_naming_it_and_the_scopes(client, setup, consent_app):
    signin(client)
    response = authorize(client, consent_app.client_id, scope="public mqtt.read", state="s")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert "Room booking" in html and "mqtt.read" in html
    assert response.headers["X-Frame-Options"] == "DENY"


def post_consent(client, application, decision, scope="public mqtt.read"):
    page = authorize(client, application.client_id, scope=scope, state="s")
    action = re.search(r'<form method="post" action="([^"]+)"', page.get_data(as_text=True)).group(1)
    action = action.replace("&amp;", "&")
    return client.post(action, data={"csrf_token": csrf_token(page), decision: "1"}, headers=headers())


def test_approving_issues_a_code_and_is_remembered(client, setup, consent_app):
    signin(client)
    response = post_consent(client, consent_app, "approve")
    assert response.status_code == 302
    assert "code" in location_params(response)
    assert response.headers["Referrer-Policy"] == "no-referrer"
    again = authorize(client, consent_app.client_id, scope="public mqtt.read", state="s")
    assert again.status_code == 302, "an approval is remembered"
    narrower = authorize(client, consent_app.client_id, scope="public", state="s")
    assert narrower.status_code == 302


def test_wider_scopes_ask_again(client, setup, world, consent_app):
    signin(client)
    post_consent(client, consent_app, "approve", scope="public")
    assert authorize(client, consent_app.client_id, scope="public mqtt.read").status_code == 200


def test_denying_redirects_with_access_denied(client, setup, consent_app):
    signin(client)
    response = post_consent(client, consent_app, "deny")
    assert response.status_code == 302
    params = location_params(response)
    assert params["error"] == "access_denied"
    assert params["state"] == "s"
    assert "code" not in params


def test_consent_without_csrf_token_is_refused(client, setup, consent_app):
    signin(client)
    authorize(client, consent_app.client_id)
    response = client.post(
        "/auth/oauth/authorize",
        query_string={"response_type": "code", "client_id": consent_app.client_id, "redirect_uri": REDIRECT_URI},
        data={"approve": "1"},
        headers=headers(),
    )
    assert response.status_code == 400
    assert "Location" not in response.headers


def exchange(client, application, code):
    return client.post(
        "/auth/oauth/token",
        query_string={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": application.client_id,
            "redirect_uri": REDIRECT_URI,
        },
        headers=headers(),
    ).get_json()


def test_authorized_applications_lists_and_revokes_approvals(client, setup, consent_app, world):
    signin(client)
    code = location_params(post_consent(client, consent_app, "approve"))["code"]
    token = exchange(client, consent_app, code)["access_token"]
    listed = client.get("/auth/oauth/authorized_applications", headers=headers()).get_json()
    assert listed["applications"] == [
        {
            "client_id": consent_app.client_id,
            "name": "Room booking",
            "scopes": "public mqtt.read",
            "approved_at": listed["applications"][0]["approved_at"],
        }
    ]
    by_token = client.get("/auth/oauth/authorized_applications", headers=headers(Authorization=f"Bearer {token}"))
    assert by_token.get_json() == listed
    response = client.delete(f"/auth/oauth/authorized_applications/{consent_app.client_id}", headers=headers())
    assert response.status_code == 200
    assert response.get_json()["revoked_tokens"] == 1
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 401
    assert world.query(select(Consent)) == []
    assert authorize(client, consent_app.client_id, scope="public mqtt.read").status_code == 200, "asks again"


@pytest.mark.parametrize("client_id", ["%00", "a%00b", "a%01b", "no-such-app"])
def test_withdrawing_an_approval_of_an_unknown_or_odd_client_id_is_a_404(client, setup, client_id):
    """NUL reached PostgreSQL (which refuses it) and was a 500."""
    signin(client)
    response = client.delete(f"/auth/oauth/authorized_applications/{client_id}", headers=headers())
    assert response.status_code == 404
    assert response.get_json()["error"] == "not_found"


def test_authorized_applications_needs_a_user(client, setup):
    response = client.get("/auth/oauth/authorized_applications", headers=headers())
    assert response.status_code == 401
    unknown = client.delete("/auth/oauth/authorized_applications/nope", headers=headers())
    assert unknown.status_code == 401


# Sign-out


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
    [{"Origin": "https://evil.example.net"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}],
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
