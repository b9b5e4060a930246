"""Pushed authorisation requests (RFC 9126), pushed and used. An application posts its
request to /auth/oauth/par, authenticated as at the token endpoint, and sends the browser to
/auth/oauth/authorize with only its client_id and the request_uri it got: one use, 60 s to arrive, kept while
the user signs in; the pushed parameters (a nonce, resources) are carried as query parameters would be.
tests/api/par_jar/test_request_objects.py pushes signed request objects; the requests are
tests/helpers/pushed_requests.py's.
"""

from __future__ import annotations

import time
from urllib.parse import unquote

from tests.helpers import REDIRECT_URI, headers, location_params, pkce_pair, signin
from tests.helpers.id_tokens import exchange, verify
from tests.helpers.oidc_authorize import sign_in_through
from tests.helpers.pages import csrf_token
from tests.helpers.pushed_requests import URN, assert_refused, authorize_pushed, basic, push, pushed_uri

# Pushing and using a request ------------------------------------------------------------------


def test_a_confidential_application_pushes_and_the_browser_carries_only_the_request_uri(client, setup, confidential):
    app, auth = confidential
    response = push(client, auth, scope="public mqtt.read", state="xyz")
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["request_uri"].startswith(URN)
    assert len(body["request_uri"]) > len(URN) + 40
    assert body["expires_in"] == 60
    assert "no-store" in response.headers["Cache-Control"]
    signin(client)
    answer = authorize_pushed(client, app.client_id, body["request_uri"])
    assert answer.status_code == 302, answer.get_data(as_text=True)
    assert answer.headers["Location"].startswith(REDIRECT_URI + "?")
    params = location_params(answer)
    assert params["state"] == "xyz"
    token = client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": params["code"], "redirect_uri": REDIRECT_URI},
        headers=headers(**auth),
    )
    assert token.status_code == 200, token.get_json()
    assert token.get_json()["scope"] == "public mqtt.read"


def test_a_public_application_pushes_with_its_client_id_and_pkce(client, world, setup):
    app, _ = world.application(setup.domain, require_pkce=True, name="SPA")
    verifier, challenge = pkce_pair()
    uri = pushed_uri(push(client, client_id=app.client_id, code_challenge=challenge, code_challenge_method="S256"))
    signin(client)
    code = location_params(authorize_pushed(client, app.client_id, uri))["code"]
    token = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": app.client_id,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        },
        headers=headers(),
    )
    assert token.status_code == 200, token.get_json()


def test_the_query_beside_the_request_uri_is_ignored_but_for_client_id(client, setup, confidential):
    app, auth = confidential
    uri = pushed_uri(push(client, auth, scope="public", state="pushed"))
    signin(client)
    answer = authorize_pushed(
        client,
        app.client_id,
        uri,
        redirect_uri="https://evil.example.net/callback",
        scope="mqtt.read",
        state="from-the-query",
        response_type="token",
    )
    assert answer.status_code == 302
    assert answer.headers["Location"].startswith(REDIRECT_URI + "?")
    assert location_params(answer)["state"] == "pushed"


def test_pushed_parameters_are_carried_like_query_parameters(client, world, oidc):
    # The nonce of an OpenID Connect request (and so a dpop_jkt, or any other) reaches the code and its tokens.
    auth = basic(oidc.app.client_id, oidc.secret)
    uri = pushed_uri(push(client, auth, scope="openid email", nonce="n-0S6_WzA2Mj"))
    signin(client)
    code = location_params(authorize_pushed(client, oidc.app.client_id, uri))["code"]
    body = exchange(client, oidc.app, oidc.secret, code).get_json()
    claims = verify(client, body["id_token"])[1]
    assert claims["nonce"] == "n-0S6_WzA2Mj"
    assert claims["email"] == "person@example.com"


# One use, in time, by its own application -----------------------------------------------------


def test_a_request_uri_gives_one_code(client, setup, confidential):
    app, auth = confidential
    uri = pushed_uri(push(client, auth))
    signin(client)
    assert authorize_pushed(client, app.client_id, uri).status_code == 302
    body = assert_refused(authorize_pushed(client, app.client_id, uri), "invalid_request_uri")
    assert "already used" in body["error_description"]


def test_an_unknown_request_uri_is_refused(client, setup):
    signin(client)
    assert_refused(authorize_pushed(client, setup.confidential_app.client_id, URN + "made-up"), "invalid_request_uri")


def test_a_request_uri_not_used_in_time_expires(app, client, setup, confidential):
    app.config["AUTHSVC_PAR_TTL"] = 1
    client_app, auth = confidential
    response = push(client, auth)
    assert response.get_json()["expires_in"] == 1
    signin(client)
    time.sleep(1.6)
    assert_refused(authorize_pushed(client, client_app.client_id, pushed_uri(response)), "invalid_request_uri")


def test_another_applications_client_id_cannot_use_the_request_uri(client, setup, confidential):
    _, auth = confidential
    uri = pushed_uri(push(client, auth))
    signin(client)
    body = assert_refused(authorize_pushed(client, setup.public_app.client_id, uri), "invalid_request_uri")
    assert "another application" in body["error_description"]
    # The rightful application still can.
    assert authorize_pushed(client, setup.confidential_app.client_id, uri).status_code == 302


def test_a_request_uri_without_a_client_id_or_with_an_unknown_one_is_refused(client, setup, confidential):
    _, auth = confidential
    uri = pushed_uri(push(client, auth))
    signin(client)
    response = client.get("/auth/oauth/authorize", query_string={"request_uri": uri}, headers=headers())
    assert "client_id" in assert_refused(response, "invalid_request")["error_description"]
    assert_refused(authorize_pushed(client, "no-such-client", uri), "invalid_client")


def test_the_user_may_sign_in_between_and_take_longer_than_the_push_lifetime(app, client, setup, confidential):
    app.config["AUTHSVC_PAR_TTL"] = 1
    client_app, auth = confidential
    uri = pushed_uri(push(client, auth, state="kept"))
    first = authorize_pushed(client, client_app.client_id, uri)
    assert first.status_code == 303  # to the sign-in page, which comes back to the same request_uri
    assert "request_uri" in unquote(unquote(first.headers["Location"]))
    time.sleep(1.6)
    back = sign_in_through(client, first)
    assert back.status_code == 302, back.get_data(as_text=True)
    assert location_params(back)["state"] == "kept"
    assert_refused(authorize_pushed(client, client_app.client_id, uri), "invalid_request_uri")


def test_prompt_login_pushed_signs_in_once(client, setup, confidential):
    app, auth = confidential
    uri = pushed_uri(push(client, auth, prompt="login"))
    signin(client)
    back = sign_in_through(client, authorize_pushed(client, app.client_id, uri))
    assert back.status_code == 302, back.headers.get("Location")
    assert "code" in location_params(back)


def test_a_consent_page_posts_back_to_the_pushed_request_and_a_denial_spends_it(client, world, setup):
    app, secret = world.application(setup.domain, confidential=True, consent=True, name="Asks")
    auth = basic(app.client_id, secret)
    signin(client)
    uri = pushed_uri(push(client, auth))
    page = authorize_pushed(client, app.client_id, uri)
    assert page.status_code == 200
    action = f"/auth/oauth/authorize?client_id={app.client_id}&request_uri={uri}"
    denied = client.post(action, data={"csrf_token": csrf_token(page), "deny": "1"}, headers=headers())
    assert denied.status_code == 302
    assert location_params(denied)["error"] == "access_denied"
    assert_refused(authorize_pushed(client, app.client_id, uri), "invalid_request_uri")
    uri = pushed_uri(push(client, auth))
    page = authorize_pushed(client, app.client_id, uri)
    approved = client.post(
        action.replace(action.split("request_uri=")[1], uri),
        data={"csrf_token": csrf_token(page), "approve": "1"},
        headers=headers(),
    )
    assert approved.status_code == 302, approved.get_data(as_text=True)
    assert "code" in location_params(approved)


# Resource indicators (RFC 8707) in a pushed request -------------------------------------------------


def test_every_pushed_resource_is_kept_and_becomes_the_tokens_audience(client, world, setup):
    orders, stock = "https://orders.example.com/api", "https://stock.example.com/"
    app, secret = world.application(setup.domain, confidential=True, resources=[orders, stock], name="Resources")
    auth = basic(app.client_id, secret)
    uri = pushed_uri(push(client, auth, resource=[orders, stock]))
    signin(client)
    code = location_params(authorize_pushed(client, app.client_id, uri))["code"]
    token = client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        headers=headers(**auth),
    )
    assert token.status_code == 200, token.get_json()
    inspected = client.get(
        "/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token.get_json()['access_token']}")
    )
    assert inspected.get_json()["aud"] == [orders, stock]
    # A pushed resource the application may not ask for is refused to the application, as JSON.
    assert_refused(push(client, auth, resource=[orders, "https://elsewhere.example.com/"]), "invalid_target")
