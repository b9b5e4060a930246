"""OpenID Connect's authorisation request parameters, prompt aside.

max_age, login_hint, id_token_hint and request objects, with and without a
session; errors go back to the client by redirect (Core 3.1.2.6), and any value
of them gets an answer. prompt is tests/api/oidc/test_oidc_authorize_prompt.py.
"""

import base64
import json
import re
import time
from html import unescape
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import HOST, OIDC_SCOPES, OTHER_HOST, REDIRECT_URI, authorize, headers, location_params, signin
from tests.helpers.oidc_authorize import (
    hint_for,
    id_token,
    id_token_of,
    redirected_error,
    sign_in_page,
    sign_in_through,
)


def email_field(page) -> str:
    """The e-mail field's value on the sign-in page, as a browser reads it."""
    field = re.search(r'<input[^>]*name="email"[^>]*>', page.get_data(as_text=True)).group(0)
    value = re.search(r'value="([^"]*)"', field)
    return unescape(value.group(1)) if value else ""


# max_age -----------------------------------------------------------------------------


def test_max_age_within_the_session_gives_a_code_and_auth_time(client, oidc):
    signin(client)
    signed_in = int(time.time())
    _, claims = id_token(client, oidc, max_age="3600")
    assert abs(claims["auth_time"] - signed_in) <= 1


def test_a_session_older_than_max_age_signs_in_again(client, oidc, clock):
    signin(client)
    clock.advance(2.1)
    response = authorize(client, oidc.app.client_id, scope="openid", max_age="1", state="s")
    back = sign_in_through(client, response)
    assert back.status_code == 302
    _, claims = id_token_of(client, oidc, back)
    assert int(time.time()) - claims["auth_time"] <= 1


def test_max_age_zero_is_prompt_login(client, oidc):
    signin(client)
    response = authorize(client, oidc.app.client_id, scope="openid", max_age="0", state="s")
    assert sign_in_through(client, response).status_code == 302


def test_max_age_without_a_session_signs_in_then_gives_a_code(client, oidc):
    response = authorize(client, oidc.app.client_id, scope="openid", max_age="60", state="s")
    _, claims = id_token_of(client, oidc, sign_in_through(client, response))
    assert "auth_time" in claims


@pytest.mark.parametrize("max_age", ["abc", "-1", "1.5", "12345678901", ""])
def test_a_malformed_max_age_is_invalid_request_by_redirect(client, oidc, max_age):
    signin(client)
    redirected_error(
        authorize(client, oidc.app.client_id, scope="openid", max_age=max_age, state="s"), "invalid_request"
    )


# login_hint ------------------------------------------------------------------------------


def test_login_hint_prefills_the_sign_in_page(client, oidc):
    response = authorize(client, oidc.app.client_id, scope="openid", login_hint="person@example.com")
    page, params = sign_in_page(client, response)
    assert params["login_hint"] == "person@example.com"
    assert email_field(page) == "person@example.com"


def test_login_hint_prefills_the_page_of_a_new_sign_in_too(client, oidc):
    signin(client)
    response = authorize(client, oidc.app.client_id, scope="openid", prompt="login", login_hint="jöe@example.com")
    page, _ = sign_in_page(client, response)
    assert email_field(page) == "jöe@example.com"


def test_login_hint_is_escaped_on_the_page(client, oidc):
    hint = '"><script>alert(1)</script>@example.com'
    page, _ = sign_in_page(client, authorize(client, oidc.app.client_id, scope="openid", login_hint=hint))
    assert "<script>alert(1)</script>" not in page.get_data(as_text=True)
    assert email_field(page) == hint


def test_a_login_hint_the_form_would_not_take_is_not_prefilled(client, oidc):
    page, _ = sign_in_page(client, authorize(client, oidc.app.client_id, scope="openid", login_hint="x" * 400))
    assert email_field(page) == ""


# id_token_hint ---------------------------------------------------------------------------


def test_an_id_token_hint_of_the_signed_in_user_gives_a_code_even_expired(client, app, oidc):
    signin(client)
    issued, _ = id_token(client, oidc)
    expired = hint_for(app, oidc.person.id, oidc.app.client_id, exp_offset=-3600)
    for hint in (issued, expired):
        _, claims = id_token(client, oidc, id_token_hint=hint)
        assert claims["sub"] == str(oidc.person.id)


def test_an_id_token_hint_of_another_user_asks_to_sign_in_as_that_user(client, app, oidc, other_person):
    signin(client)
    hint = hint_for(app, other_person.id, oidc.app.client_id)
    response = authorize(client, oidc.app.client_id, scope="openid", id_token_hint=hint, state="s")
    back = sign_in_through(client, response, email="other@example.com")
    _, claims = id_token_of(client, oidc, back)
    assert claims["sub"] == str(other_person.id)


def test_a_sign_in_as_someone_else_than_the_hint_names_is_login_required(client, app, oidc, other_person):
    hint = hint_for(app, other_person.id, oidc.app.client_id)
    response = authorize(client, oidc.app.client_id, scope="openid", id_token_hint=hint, state="s")
    redirected_error(sign_in_through(client, response, email="person@example.com"), "login_required")


def test_an_id_token_hint_without_a_session_signs_in_then_gives_a_code(client, app, oidc):
    hint = hint_for(app, oidc.person.id, oidc.app.client_id)
    response = authorize(client, oidc.app.client_id, scope="openid", id_token_hint=hint, state="s")
    _, claims = id_token_of(client, oidc, sign_in_through(client, response))
    assert claims["sub"] == str(oidc.person.id)


def test_an_id_token_hint_signed_by_another_domains_key_is_refused(client, app, world, oidc):
    other = world.domain(OTHER_HOST, scopes=OIDC_SCOPES)
    foreign = hint_for(app, oidc.person.id, oidc.app.client_id, domain=other)
    signin(client)
    for hint in (foreign, "not-a-token", foreign[:-8] + "AAAAAAAA"):
        response = authorize(client, oidc.app.client_id, scope="openid", id_token_hint=hint, state="s")
        redirected_error(response, "invalid_request")


def test_an_unsigned_id_token_hint_is_refused(client, oidc):
    header, claims = (json.dumps(part).encode() for part in ({"alg": "none"}, {"sub": str(oidc.person.id)}))
    unsigned = ".".join(base64.urlsafe_b64encode(part).rstrip(b"=").decode() for part in (header, claims)) + "."
    signin(client)
    response = authorize(client, oidc.app.client_id, scope="openid", id_token_hint=unsigned, state="s")
    redirected_error(response, "invalid_request")


# Request objects and where errors go ----------------------------------------------------------


def test_a_request_uri_to_fetch_is_refused_by_redirect(client, oidc):
    # Request objects by value and pushed requests are tests/api/par_jar/test_request_objects.py and
    # tests/api/par_jar/test_pushed_requests*.py.
    for signed_in in (False, True):
        if signed_in:
            signin(client)
        response = authorize(client, oidc.app.client_id, scope="openid", state="s", request_uri="eyJ.eyJ.sig")
        redirected_error(response, "request_uri_not_supported")


@pytest.mark.parametrize(
    "params",
    [
        {"client_id": "no-such-client"},
        {"redirect_uri": "https://evil.example.net/callback"},
    ],
)
def test_errors_before_the_client_and_redirect_uri_are_valid_are_never_redirected(client, oidc, params):
    signin(client)
    query = {"scope": "openid", "state": "s", "prompt": "none", "max_age": "x", "request": "eyJ"}
    response = authorize(client, params.pop("client_id", oidc.app.client_id), **query, **params)
    assert response.status_code == 400
    assert "Location" not in response.headers
    # The request object "eyJ" is refused before its redirect_uri could be read.
    assert response.get_json()["error"] in ("invalid_client", "invalid_request", "invalid_request_object")


def test_discovery_says_which_parameters_are_taken(client, oidc):
    metadata = client.get("/.well-known/openid-configuration", headers=headers()).get_json()
    assert metadata["request_parameter_supported"] is True
    assert metadata["request_uri_parameter_supported"] is False
    assert metadata["claims_parameter_supported"] is False
    assert metadata["prompt_values_supported"] == ["none", "login", "consent", "select_account"]


OIDC_VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["none", "login", "consent", "none login", "select_account", "0", "-1", "9" * 30, "eyJ.eyJ.x"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    params=st.dictionaries(
        st.sampled_from(
            ["nonce", "prompt", "max_age", "login_hint", "id_token_hint", "request", "request_uri", "sign_in_asked"]
        ),
        OIDC_VALUES,
        max_size=4,
    ),
    signed_in=st.booleans(),
)
def test_any_value_of_the_parameters_gets_a_page_a_sign_in_or_a_redirect_to_the_client(client, oidc, params, signed_in):
    client.delete_cookie("user", domain=HOST)
    if signed_in:
        signin(client)
    response = authorize(client, oidc.app.client_id, scope="openid", state="s", **params)
    assert response.status_code in (200, 302, 303, 400), response.get_data(as_text=True)
    if response.status_code == 302:
        assert response.headers["Location"].startswith(REDIRECT_URI + "?")
        assert location_params(response)["state"] == "s"
    elif response.status_code == 303:
        assert urlsplit(response.headers["Location"]).path == "/auth/login"
    elif response.status_code == 400:
        # A request object that is not one is refused before its redirect_uri could be trusted.
        assert response.get_json()["error"] in ("invalid_request", "invalid_request_object")


# response_mode -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["form_post", "fragment", "query.jwt", "jwt", "web_message", "QUERY"])
def test_a_response_mode_not_served_is_refused_not_ignored(client, oidc, mode):
    """The client expects its answer another way (a form post, a fragment, a JWT) than the query it would get."""
    signin(client)
    response = authorize(client, oidc.app.client_id, scope="openid", response_mode=mode, state="s")
    params = redirected_error(response, "invalid_request")
    assert "response_mode" in params["error_description"]


def test_response_mode_query_is_served(client, oidc):
    signin(client)
    assert "code" in location_params(authorize(client, oidc.app.client_id, scope="openid", response_mode="query"))
