"""The browser's pages: sign-in (GET/POST /auth/login) and consent, with the approvals it records
(listed and withdrawn at /auth/oauth/authorized_applications).

Sign-out and the session's lifecycle are tests/api/auth/test_sessions.py.
"""

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import Consent
from tests.helpers import HOST, PASSWORD, REDIRECT_URI, authorize, headers, location_params, signin
from tests.helpers.pages import INSPECT, csrf_token, login_page, post_consent, submit_login


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
