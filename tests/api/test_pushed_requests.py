"""Issue 26 point 2: pushed authorisation requests (RFC 9126).

An application posts its request to /auth/oauth/par, authenticated as at the
token endpoint, and sends the browser to /auth/oauth/authorize with only its
client_id and the request_uri it got: one use, 60 s to arrive, kept while the
user signs in. tests/test_request_objects.py pushes signed request objects.
"""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import unquote

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, RegistrationToken
from tests.api.test_id_tokens import exchange, verify
from tests.api.test_private_key_jwt import ASSERTION_TYPE, JWKS, RSA_KEY, assertion
from tests.helpers import HOST, REDIRECT_URI, headers, location_params, pkce_pair, signin
from tests.helpers import client_registration as client_registration_support
from tests.helpers.admin_api import ADMIN_SCOPES, call
from tests.helpers.console import as_admin, get, submit, text
from tests.helpers.console import people as people  # noqa: F401 - a fixture
from tests.helpers.dpop import TOKEN_URL, Holder
from tests.helpers.oidc_authorize import sign_in_through
from tests.helpers.pages import csrf_token

URN = "urn:ietf:params:oauth:request_uri:"
PAR_URL = f"https://{HOST}/auth/oauth/par"


def basic(client_id: str, secret: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


def push(client, auth: dict | None = None, **params):
    """POST a request to PAR: ``auth`` is the Basic header, else the body authenticates (or names the client)."""
    body = {"response_type": "code", "redirect_uri": REDIRECT_URI, "scope": "public", "state": "s", **params}
    body = {k: v for k, v in body.items() if v is not None}
    return client.post("/auth/oauth/par", data=body, headers=headers(**(auth or {})))


def pushed_uri(response) -> str:
    assert response.status_code == 201, response.get_json()
    return response.get_json()["request_uri"]


def authorize_pushed(client, client_id: str, request_uri: str, **extra):
    query = {"client_id": client_id, "request_uri": request_uri, **extra}
    return client.get("/auth/oauth/authorize", query_string=query, headers=headers())


def assert_refused(response, error: str, status: int = 400) -> dict:
    """A JSON error to the caller, never a redirect."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert "Location" not in response.headers
    body = response.get_json()
    assert body["error"] == error, body
    return body


@pytest.fixture
def confidential(setup):
    return setup.confidential_app, basic(setup.confidential_app.client_id, setup.client_secret)


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


# Applications that must push ------------------------------------------------------------------


def test_an_application_that_must_push_is_refused_a_request_in_the_query(client, world, setup):
    app, secret = world.application(
        setup.domain, confidential=True, require_pushed_authorization_requests=True, name="Pushes"
    )
    signin(client)
    query = {"response_type": "code", "client_id": app.client_id, "redirect_uri": REDIRECT_URI, "state": "s"}
    response = client.get("/auth/oauth/authorize", query_string=query, headers=headers())
    body = assert_refused(response, "invalid_request")
    assert "/auth/oauth/par" in body["error_description"]
    uri = pushed_uri(push(client, basic(app.client_id, secret)))
    assert authorize_pushed(client, app.client_id, uri).status_code == 302


def test_require_par_is_set_by_the_cli_and_the_admin_api(runner, client, world, setup):
    result = runner.invoke(
        args=["apps", "create", "--domain", HOST, "--name", "Bank", "--redirect-uri", REDIRECT_URI, "--require-par"]
    )
    assert result.exit_code == 0, result.output
    client_id = json.loads(result.output)["client_id"]
    [made] = world.query(select(Application).where(Application.client_id == client_id))
    assert made.require_pushed_authorization_requests is True
    result = runner.invoke(args=["apps", "update", "--client-id", client_id, "--no-require-par"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["require_pushed_authorization_requests"] is False
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes=ADMIN_SCOPES, permission="admin")
    change = {"require_pushed_authorization_requests": True}
    answer = call(client, "patch", f"/oauth_apps/{made.id}", key, json=change)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["require_pushed_authorization_requests"] is True


def test_the_console_shows_and_sets_require_par(client, world, setup, people):
    as_admin(client)
    path = f"/domains/{setup.domain.id}/applications/{setup.public_app.id}"
    page = get(client, path)
    assert "Require pushed authorisation requests" in text(page)
    fields = {"name": "SPA", "redirect_uris": REDIRECT_URI, "scopes": "public"}
    response = submit(client, path, {**fields, "require_pushed_authorization_requests": "y"}, page=page)
    assert response.status_code == 303
    [stored] = world.query(select(Application).where(Application.id == setup.public_app.id))
    assert stored.require_pushed_authorization_requests is True
    assert "Requires pushed authorisation requests (PAR)</dt><dd>Yes" in text(get(client, path))


# What PAR refuses ---------------------------------------------------------------------------------


def test_a_wrong_secret_or_none_is_invalid_client(client, setup):
    app = setup.confidential_app
    assert_refused(push(client, basic(app.client_id, "wrong")), "invalid_client", 401)
    response = push(client, client_id=app.client_id)
    assert response.status_code in (400, 401)
    assert response.get_json()["error"] == "invalid_client"
    assert push(client, client_id="no-such-client").get_json()["error"] == "invalid_client"
    response = push(client, client_id=app.client_id, client_secret="wrong")
    assert response.get_json()["error"] == "invalid_client"


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"redirect_uri": "https://evil.example.net/callback"}, "invalid_request"),
        ({"scope": "admin"}, "invalid_scope"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"request_uri": URN + "abc"}, "invalid_request"),
        ({"code_challenge": "x" * 43, "code_challenge_method": "plain"}, "invalid_request"),
        ({"prompt": "none login"}, "invalid_request"),
    ],
)
def test_a_request_authorize_would_refuse_is_refused_at_push_as_json(client, confidential, params, error):
    _, auth = confidential
    body = assert_refused(push(client, auth, **params), error)
    assert "state" not in body


def test_a_public_application_requiring_pkce_must_push_a_challenge(client, world, setup):
    app, _ = world.application(setup.domain, require_pkce=True, name="SPA")
    assert_refused(push(client, client_id=app.client_id), "invalid_request")


def test_parameters_in_the_query_of_a_push_are_refused(client, confidential):
    _, auth = confidential
    response = client.post(
        "/auth/oauth/par?scope=public",
        data={"response_type": "code", "redirect_uri": REDIRECT_URI},
        headers=headers(**auth),
    )
    assert_refused(response, "invalid_request")


def test_pushing_takes_only_post(client):
    assert client.get("/auth/oauth/par", headers=headers()).status_code == 405


# private_key_jwt at PAR: the assertion's aud may be the issuer, the token endpoint or PAR itself -----


@pytest.mark.parametrize("aud", [PAR_URL, f"https://{HOST}", f"https://{HOST}/auth/oauth/token"])
def test_a_client_assertion_authenticates_a_push(client, world, setup, aud):
    app, _ = world.application(setup.domain, token_endpoint_auth_method="private_key_jwt", jwks=JWKS, name="Keyed")
    signed = assertion(app.client_id, RSA_KEY, "RS256", aud=aud)
    response = push(client, client_assertion_type=ASSERTION_TYPE, client_assertion=signed)
    uri = pushed_uri(response)
    signin(client)
    assert authorize_pushed(client, app.client_id, uri).status_code == 302


def test_a_client_assertion_for_another_endpoint_is_refused(client, world, setup):
    app, _ = world.application(setup.domain, token_endpoint_auth_method="private_key_jwt", jwks=JWKS, name="Keyed")
    signed = assertion(app.client_id, RSA_KEY, "RS256", aud=f"https://{HOST}/auth/oauth/introspect")
    response = push(client, client_assertion_type=ASSERTION_TYPE, client_assertion=signed)
    assert response.get_json()["error"] == "invalid_client"


# Discovery and registration ---------------------------------------------------------------------


@pytest.mark.parametrize("document", ["oauth-authorization-server", "openid-configuration"])
def test_discovery_names_the_endpoint(client, setup, document):
    metadata = client.get(f"/.well-known/{document}", headers=headers()).get_json()
    assert metadata["pushed_authorization_request_endpoint"] == PAR_URL
    assert metadata["require_pushed_authorization_requests"] is False


def test_a_registered_client_may_ask_to_be_required_to_push(client, world, setup):
    def register(**metadata):
        with world.app.app_context():
            token, value = RegistrationToken.issue(setup.domain.id, expires_in=600, max_uses=1, created_by="test")
        world.save(token)
        return client_registration_support.register(client, value, {**client_registration_support.METADATA, **metadata})

    answer = register(require_pushed_authorization_requests=True)
    assert answer.status_code == 201, answer.get_json()
    assert answer.get_json()["require_pushed_authorization_requests"] is True
    [made] = world.query(select(Application).where(Application.client_id == answer.get_json()["client_id"]))
    assert made.require_pushed_authorization_requests is True
    assert register(require_pushed_authorization_requests="yes").get_json()["error"] == "invalid_client_metadata"


# DPoP at PAR (RFC 9449 10.1) ----------------------------------------------------------------------


def push_with_proof(client, auth: dict, holder: Holder, **params):
    """A push with a DPoP proof for PAR's URL, answering the server's use_dpop_nonce once as a client does."""
    for _ in range(2):
        response = holder.remember(push(client, {**auth, "DPoP": holder.proof(PAR_URL)}, **params))
        if response.status_code != 400 or response.get_json()["error"] != "use_dpop_nonce":
            break
    return response


def dpop_exchange(client, auth: dict, code: str, holder: Holder | None):
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    for _ in range(2):
        extra = {"DPoP": holder.proof()} if holder else {}
        response = client.post("/auth/oauth/token", data=data, headers=headers(**auth, **extra))
        if holder is None or response.get_json().get("error") != "use_dpop_nonce":
            return response
        holder.remember(response)
    return response


def pushed_code(client, app, auth: dict, holder: Holder | None = None, **params) -> str:
    """A code for a request pushed with a proof by ``holder`` (or none)."""
    response = push_with_proof(client, auth, holder, **params) if holder else push(client, auth, **params)
    signin(client)
    return location_params(authorize_pushed(client, app.client_id, pushed_uri(response)))["code"]


def test_a_proof_sent_to_par_binds_the_code_to_its_key(client, setup, confidential):
    app, auth = confidential
    holder = Holder()
    first = push(client, {**auth, "DPoP": holder.proof(PAR_URL, nonce=None)})
    # The server's nonce first (RFC 9449 8), as at the token endpoint.
    assert first.status_code == 400
    assert first.get_json()["error"] == "use_dpop_nonce"
    assert first.headers["DPoP-Nonce"]
    response = push_with_proof(client, auth, holder)
    assert response.status_code == 201, response.get_json()
    assert response.headers["DPoP-Nonce"] == holder.nonce
    signin(client)
    code = location_params(authorize_pushed(client, app.client_id, pushed_uri(response)))["code"]
    token = dpop_exchange(client, auth, code, holder)
    assert token.status_code == 200, token.get_json()
    assert token.get_json()["token_type"] == "DPoP"


@pytest.mark.parametrize("other", ["another key", "no proof"])
def test_a_code_bound_at_par_is_refused_to_another_key_or_none(client, confidential, other):
    app, auth = confidential
    code = pushed_code(client, app, auth, Holder())
    refused = dpop_exchange(client, auth, code, Holder() if other == "another key" else None)
    assert refused.get_json()["error"] == "invalid_grant", refused.get_json()
    assert "dpop_jkt" in refused.get_json()["error_description"]


def test_a_proof_and_a_pushed_dpop_jkt_must_name_the_same_key(client, confidential):
    _, auth = confidential
    holder = Holder()
    body = assert_refused(push_with_proof(client, auth, holder, dpop_jkt=Holder().jkt), "invalid_request")
    assert "dpop_jkt" in body["error_description"]
    assert pushed_uri(push_with_proof(client, auth, holder, dpop_jkt=holder.jkt))


def test_a_proof_for_another_url_is_refused_at_par(client, confidential):
    _, auth = confidential
    holder = Holder()
    push_with_proof(client, auth, holder)  # learns the nonce
    response = push(client, {**auth, "DPoP": holder.proof(TOKEN_URL)})
    assert assert_refused(response, "invalid_dpop_proof")["error_description"].endswith("this request's URI.")


def test_a_pushed_dpop_jkt_without_a_proof_binds_the_code(client, confidential):
    app, auth = confidential
    holder = Holder()
    code = pushed_code(client, app, auth, dpop_jkt=holder.jkt)
    assert dpop_exchange(client, auth, code, Holder()).get_json()["error"] == "invalid_grant"
    code = pushed_code(client, app, auth, dpop_jkt=holder.jkt)
    assert dpop_exchange(client, auth, code, holder).status_code == 200


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
