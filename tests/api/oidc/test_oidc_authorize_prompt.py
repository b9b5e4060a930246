"""OpenID Connect's prompt parameter: none, login and consent, alone and
together, with and without a session; errors go back to the client by redirect (Core 3.1.2.6).

The other parameters (max_age, login_hint, id_token_hint, request objects) are
tests/api/oidc/test_oidc_authorize_params.py.
"""

import re
import time
from html import unescape

import pytest

from tests.helpers import HOST, OIDC_SCOPES, authorize, headers, location_params, signin
from tests.helpers.oidc_authorize import (
    hint_for,
    id_token,
    id_token_of,
    redirected_error,
    sign_in_page,
    sign_in_through,
)
from tests.helpers.pages import csrf_token


def approve(client, page):
    """Press Allow on the consent page ``page``."""
    action = unescape(re.search(r'<form method="post" action="([^"]+)"', page.get_data(as_text=True)).group(1))
    return client.post(action, data={"csrf_token": csrf_token(page), "approve": "1"}, headers=headers())


@pytest.fixture
def consent_app(world, oidc):
    application, secret = world.application(oidc.domain, confidential=True, scopes=OIDC_SCOPES, consent=True)
    return application


# prompt=none -------------------------------------------------------------------


def test_prompt_none_applies_to_plain_oauth_requests_too(client, oidc):
    redirected_error(authorize(client, oidc.app.client_id, scope="public", prompt="none", state="s"), "login_required")
    signin(client)
    assert "code" in location_params(authorize(client, oidc.app.client_id, scope="public", prompt="none"))


def test_prompt_none_is_consent_required_until_the_user_has_approved(client, oidc, consent_app):
    signin(client)
    response = authorize(client, consent_app.client_id, scope="openid", prompt="none", state="s")
    redirected_error(response, "consent_required")
    page = authorize(client, consent_app.client_id, scope="openid", state="s")
    approved = approve(client, page)
    assert "code" in location_params(approved)
    response = authorize(client, consent_app.client_id, scope="openid", prompt="none", state="s")
    assert "code" in location_params(response), "approved before: no page needed"


def test_prompt_none_with_another_value_is_invalid_request_by_redirect(client, oidc):
    signin(client)
    for prompt in ("none login", "none consent"):
        redirected_error(
            authorize(client, oidc.app.client_id, scope="openid", prompt=prompt, state="s"), "invalid_request"
        )


def test_prompt_none_is_login_required_when_the_session_is_older_than_max_age(client, oidc, clock):
    signin(client)
    clock.advance(1.1)
    response = authorize(client, oidc.app.client_id, scope="openid", prompt="none", max_age="0", state="s")
    redirected_error(response, "login_required")
    _, claims = id_token(client, oidc, prompt="none", max_age="3600")
    assert claims["auth_time"] <= time.time()


def test_prompt_none_with_an_id_token_hint_of_another_user_is_login_required(client, app, oidc, other_person):
    signin(client)
    hint = hint_for(app, other_person.id, oidc.app.client_id)
    response = authorize(client, oidc.app.client_id, scope="openid", prompt="none", id_token_hint=hint, state="s")
    redirected_error(response, "login_required")
    own = hint_for(app, oidc.person.id, oidc.app.client_id)
    _, claims = id_token(client, oidc, prompt="none", id_token_hint=own)
    assert claims["sub"] == str(oidc.person.id)


# prompt=login --------------------------------------------------------------------


def test_prompt_login_with_a_session_shows_the_sign_in_page_and_the_new_sign_in_satisfies_it(client, oidc, clock):
    signin(client)
    _, first = id_token(client, oidc)
    old_cookie = client.get_cookie("user", domain=HOST).value
    clock.advance(1.1)
    response = authorize(client, oidc.app.client_id, scope="openid", prompt="login", state="s")
    page, _ = sign_in_page(client, response)
    html = page.get_data(as_text=True)
    assert "Sign in again" in html and 'name="password"' in html
    back = sign_in_through(client, response)
    assert back.status_code == 302, "the fresh sign-in satisfies prompt=login: no second sign-in page"
    assert location_params(back)["state"] == "s"
    _, claims = id_token_of(client, oidc, back)
    assert claims["auth_time"] > first["auth_time"]
    assert claims["sid"] != first["sid"]
    assert client.get_cookie("user", domain=HOST).value != old_cookie


def test_prompt_login_without_a_session_signs_in_once(client, oidc):
    response = authorize(client, oidc.app.client_id, scope="openid", prompt="login", state="s")
    page, _ = sign_in_page(client, response)
    assert "Sign in again" not in page.get_data(as_text=True)
    back = sign_in_through(client, response)
    assert back.status_code == 302
    assert "code" in location_params(back)


def test_skipping_the_sign_in_page_does_not_satisfy_prompt_login(client, oidc):
    signin(client)
    response = authorize(client, oidc.app.client_id, scope="openid", prompt="login", state="s")
    _, params = sign_in_page(client, response)
    # The way back, taken with the session that was there before: the sign-in is asked for again.
    assert client.get(params["continue"], headers=headers()).status_code == 303
    forged = re.sub(r"sign_in_asked=[^&]+", "sign_in_asked=forged.note", params["continue"])
    assert client.get(forged, headers=headers()).status_code == 303


# prompt=consent --------------------------------------------------------------------


def test_prompt_consent_asks_even_an_application_without_consent_and_after_approval(client, oidc, consent_app):
    signin(client)
    for application in (oidc.app, consent_app):
        page = authorize(client, application.client_id, scope="openid", prompt="consent", state="s")
        assert page.status_code == 200
        assert "Allow" in page.get_data(as_text=True)
        approved = approve(client, page)
        assert "code" in location_params(approved)
        # Approved now, and still asked when the request says so.
        assert authorize(client, application.client_id, scope="openid", prompt="consent").status_code == 200
        assert authorize(client, application.client_id, scope="openid").status_code == 302


def test_prompt_login_consent_signs_in_then_asks_and_the_approval_goes_through(client, oidc, consent_app):
    signin(client)
    response = authorize(client, consent_app.client_id, scope="openid", prompt="login consent", state="s")
    page = sign_in_through(client, response)
    assert page.status_code == 200, "the consent page, after the new sign-in"
    approved = approve(client, page)
    assert approved.status_code == 302
    assert "code" in location_params(approved)
