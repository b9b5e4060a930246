"""docs/platform.md#authorisation-code-flow: GET /auth/oauth/authorize, with the ``user`` session cookie."""

from urllib.parse import parse_qs, urlsplit

import pytest

from authsvc.core.database import db
from authsvc.core.models import Application
from tests.helpers import OTHER_HOST, REDIRECT_URI, authorize, location_params, pkce_pair, signin
from tests.helpers.pages import post_consent


def test_redirects_to_the_redirect_uri_with_code_and_state(client, setup):
    signin(client)
    response = authorize(client, setup.public_app.client_id, state="xyz")
    assert response.status_code == 302
    assert response.headers["Location"].startswith(REDIRECT_URI + "?")
    params = location_params(response)
    assert params["state"] == "xyz"
    assert len(params["code"]) >= 40


def test_without_a_session_the_browser_is_sent_to_sign_in(client, setup):
    response = authorize(client, setup.public_app.client_id, state="xyz")
    assert response.status_code == 303
    location = urlsplit(response.headers["Location"])
    assert location.path == "/auth/login"
    back = parse_qs(location.query)["continue"][0]
    assert back.startswith("/auth/oauth/authorize?")
    assert parse_qs(urlsplit(back).query)["client_id"] == [setup.public_app.client_id]


def test_a_session_of_another_domain_does_not_count(client, setup, world):
    other = world.domain(OTHER_HOST)
    world.user(other, "elsewhere@example.com")
    signin(client, "elsewhere@example.com", host=OTHER_HOST)
    cookie = client.get_cookie("user", domain=OTHER_HOST).value
    client.set_cookie("user", cookie, domain="auth.example.com")
    response = authorize(client, setup.public_app.client_id)
    assert response.status_code == 303


def test_a_forged_session_cookie_does_not_count(client, setup):
    client.set_cookie("user", "forged-session-id", domain="auth.example.com")
    assert authorize(client, setup.public_app.client_id).status_code == 303


@pytest.mark.parametrize(
    "params,error",
    [
        ({"client_id": "no-such-client"}, "invalid_client"),
        ({"redirect_uri": "https://evil.example.net/callback"}, "invalid_request"),
        ({"redirect_uri": REDIRECT_URI + "/extra"}, "invalid_request"),
        ({"redirect_uri": REDIRECT_URI.upper()}, "invalid_request"),
        ({"redirect_uri": REDIRECT_URI + "?x=1"}, "invalid_request"),
        ({"redirect_uri": 'https://x.example/"quoted"\\'}, "invalid_request"),
    ],
)
def test_unknown_client_or_unregistered_redirect_uri_is_400_json_without_redirect(client, setup, params, error):
    signin(client)
    response = authorize(client, params.pop("client_id", setup.public_app.client_id), **params)
    assert response.status_code == 400
    assert "Location" not in response.headers
    assert response.get_json()["error"] == error


def test_client_of_another_domain_is_invalid_client(client, setup, world):
    other = world.domain(OTHER_HOST)
    other_app, _ = world.application(other)
    signin(client)
    response = authorize(client, other_app.client_id)
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_client"


@pytest.mark.parametrize(
    "params,error",
    [
        ({"scope": "public mqtt.write"}, "invalid_scope"),
        ({"scope": "admin"}, "invalid_scope"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"code_challenge": "short", "code_challenge_method": "S256"}, "invalid_request"),
        ({"code_challenge": "a" * 43, "code_challenge_method": "S512"}, "invalid_request"),
    ],
)
def test_other_errors_redirect_with_error_and_state(client, setup, params, error):
    signin(client)
    response = authorize(client, setup.public_app.client_id, state="s1", **params)
    assert response.status_code == 302
    assert response.headers["Location"].startswith(REDIRECT_URI + "?")
    result = location_params(response)
    assert result["error"] == error
    assert result["state"] == "s1"
    assert "code" not in result


def test_an_application_that_requires_pkce_refuses_a_request_without_challenge(client, setup, world):
    strict, _ = world.application(setup.domain, require_pkce=True)
    signin(client)
    response = authorize(client, strict.client_id, state="s")
    assert response.status_code == 302
    assert location_params(response)["error"] == "invalid_request"
    _, challenge = pkce_pair()
    ok = authorize(client, strict.client_id, code_challenge=challenge, code_challenge_method="S256")
    assert "code" in location_params(ok)


def test_omitted_redirect_uri_uses_the_single_registered_one(client, setup):
    signin(client)
    response = authorize(client, setup.public_app.client_id, redirect_uri=None)
    assert response.status_code == 302
    assert response.headers["Location"].startswith(REDIRECT_URI + "?code=")


def test_omitted_redirect_uri_is_refused_when_several_are_registered(client, setup, world):
    many, _ = world.application(setup.domain, redirect_uris=[REDIRECT_URI, "https://app.example.com/other"])
    signin(client)
    response = authorize(client, many.client_id, redirect_uri=None)
    assert response.status_code == 400
    assert "Location" not in response.headers


def test_a_repeated_parameter_is_refused(client, setup):
    signin(client)
    response = client.get(
        "/auth/oauth/authorize",
        query_string=[
            ("response_type", "code"),
            ("client_id", setup.public_app.client_id),
            ("redirect_uri", REDIRECT_URI),
            ("scope", "public"),
            ("scope", "mqtt.read"),
        ],
        headers={"Host": "auth.example.com"},
    )
    assert response.status_code in (302, 400)
    body = location_params(response) if response.status_code == 302 else response.get_json()
    assert body["error"] == "invalid_request"


def test_a_new_public_application_requires_pkce_unless_created_in_legacy_mode(app, setup):
    # The model's default, which the CLI, the admin API and the console share when not told otherwise.
    with app.app_context():
        public = Application(domain_id=setup.domain.id, name="p", client_id="p-default", redirect_uris=[REDIRECT_URI])
        confidential = Application(
            domain_id=setup.domain.id,
            name="c",
            client_id="c-default",
            client_secret_digest="0" * 64,
            redirect_uris=[REDIRECT_URI],
        )
        db.session.add_all([public, confidential])
        db.session.commit()
        assert (public.require_pkce, public.allow_plain_pkce) == (True, False)
        assert confidential.require_pkce is False


@pytest.mark.parametrize("require_pkce", [True, False])
def test_plain_pkce_is_refused_unless_the_application_allows_it(client, setup, world, require_pkce):
    strict, _ = world.application(setup.domain, require_pkce=require_pkce)
    lenient, _ = world.application(setup.domain, require_pkce=require_pkce, allow_plain_pkce=True)
    signin(client)
    verifier, _ = pkce_pair()
    for method in ("plain", None):  # RFC 7636's default method is plain
        refused = authorize(client, strict.client_id, state="s", code_challenge=verifier, code_challenge_method=method)
        assert refused.status_code == 302
        assert location_params(refused)["error"] == "invalid_request"
    allowed = authorize(client, lenient.client_id, code_challenge=verifier, code_challenge_method="plain")
    assert "code" in location_params(allowed)


def test_an_application_that_requires_pkce_refuses_a_challenge_without_its_method(client, setup, world):
    strict, _ = world.application(setup.domain, require_pkce=True, allow_plain_pkce=True)
    signin(client)
    _, challenge = pkce_pair()
    response = authorize(client, strict.client_id, state="s", code_challenge=challenge)
    assert response.status_code == 302
    assert location_params(response)["error"] == "invalid_request"
    assert "code_challenge_method" in location_params(response)["error_description"]


def test_the_legacy_mode_runs_the_specs_flow_without_pkce(client, setup):
    signin(client)
    assert "code" in location_params(authorize(client, setup.public_app.client_id))


def test_every_authorization_response_names_its_issuer(client, setup, world):
    """RFC 9207: ``iss`` in success and error redirects, the domain's own issuer."""
    signin(client)
    success = location_params(authorize(client, setup.public_app.client_id, state="s"))
    assert "code" in success and success["iss"] == "https://auth.example.com"
    error = location_params(authorize(client, setup.public_app.client_id, state="s", scope="mqtt.write"))
    assert error["error"] == "invalid_scope" and error["iss"] == "https://auth.example.com"
    consenting, _ = world.application(setup.domain, consent=True)
    denied = location_params(post_consent(client, consenting, "deny", scope="public"))
    assert denied["error"] == "access_denied" and denied["iss"] == "https://auth.example.com"
    other = world.domain(OTHER_HOST)
    elsewhere, _ = world.application(other)
    world.user(other, "elsewhere@example.com")
    signin(client, "elsewhere@example.com", host=OTHER_HOST)
    assert location_params(authorize(client, elsewhere.client_id, host=OTHER_HOST))["iss"] == f"https://{OTHER_HOST}"
