"""Relying parties nobody here wrote, over HTTP against gunicorn.

- panva's openid-client (Node, OpenID certified; tests/e2e/rp/, installed from its
  lock with ``npm ci`` into a cache directory): discovery, code + PKCE + nonce,
  ID token validation against the JWKS, UserInfo, refresh, RP-initiated logout
  (``buildEndSessionUrl``), then ``prompt=none`` answered ``login_required``;
  max_age=0 signs in again.
- Authlib's Flask client with ``server_metadata_url``: the same from Python.
- Back-channel logout: a receiver on loopback gets the Logout Token of the
  session the relying party signed out of, valid against the JWKS.
- Key rotation: a token signed before still validates through the JWKS; new
  ones carry the new ``kid``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import requests
from authlib.common.urls import add_params_to_uri
from authlib.integrations.flask_client import OAuth
from authlib.oidc.core import CodeIDToken
from flask import Flask, jsonify, redirect, request
from joserfc import jws, jwt
from joserfc.jwk import KeySet

from tests.helpers.oidc_logout import Receiver
from tests.helpers.relying_party import PASSWORD, REDIRECT_URI, SCOPES, run_harness, seed_domain
from tests.helpers.servers import running_service

pytestmark = pytest.mark.slow

POST_LOGOUT_REDIRECT_URI = "http://127.0.0.1:9/signed-out"


@pytest.fixture(scope="module")
def receiver():
    made = Receiver()
    yield made
    made.close()


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory, receiver):
    # The back-channel receiver is on loopback: the operator's setting allows it.
    instance = tmp_path_factory.mktemp("instance")
    with running_service(instance, AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS="true") as svc:
        seed_domain(svc, PASSWORD, SCOPES, "--name", "OIDC")
        svc.app = svc.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "RP",
            "--redirect-uri",
            REDIRECT_URI,
            "--scopes",
            SCOPES,
            "--confidential",
            "--require-pkce",
            "--post-logout-redirect-uri",
            POST_LOGOUT_REDIRECT_URI,
            "--backchannel-logout-uri",
            receiver.url,
        )
        svc.es256_app = svc.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "RP ES256",
            "--redirect-uri",
            REDIRECT_URI,
            "--scopes",
            SCOPES,
            "--id-token-alg",
            "ES256",
        )
        yield svc


def run_openid_client(command, service, app, *extra):
    return run_harness(command, "rp.mjs", service, app, PASSWORD, "--scope", SCOPES, *extra)


def test_openid_client_signs_in_with_code_pkce_and_nonce_and_validates_the_id_token(openid_client, service, receiver):
    steps = run_openid_client(
        openid_client,
        service,
        service.app,
        f"--client-secret={service.app['client_secret']}",
        "--post-logout-redirect-uri",
        POST_LOGOUT_REDIRECT_URI,
    )
    assert steps["discovery"]["issuer"] == service.url
    assert steps["discovery"]["jwks_uri"] == f"{service.url}/auth/oauth/jwks"
    token = steps["token"]
    assert token["id_token_header"]["alg"] == "RS256"
    assert token["id_token_header"]["kid"]
    claims = token["claims"]
    assert claims["iss"] == service.url
    assert claims["aud"] == service.app["client_id"]
    assert claims["azp"] == service.app["client_id"]
    assert claims["email"] == "alice@example.com"
    assert claims["name"] == "Alice"
    assert claims["amr"] == ["pwd"]
    assert {"sid", "auth_time", "at_hash", "nonce"} <= set(claims)
    assert steps["userinfo"]["userinfo"]["sub"] == claims["sub"]
    assert steps["userinfo"]["userinfo"]["email"] == "alice@example.com"
    # openid-client compared sub, aud, auth_time, sid and azp of the refreshed ID token with the first.
    assert steps["refresh"]["new_access_token"] is True
    assert "nonce" not in steps["refresh"]["claims"]
    # RP-initiated logout: openid-client found end_session_endpoint and was sent back with its state.
    assert steps["discovery"]["end_session_endpoint"] == f"{service.url}/auth/oauth/end_session"
    assert steps["logout"]["status"] == 303
    assert steps["logout"]["location"].startswith(f"{POST_LOGOUT_REDIRECT_URI}?state=")
    assert steps["prompt_none_after_logout"]["error"] == "login_required"
    # Back-channel logout: the application was told that this very session ended.
    (received,) = receiver.wait()
    jwks = KeySet.import_key_set(requests.get(f"{service.url}/auth/oauth/jwks", timeout=10).json())
    logout = jwt.decode(received["form"]["logout_token"][0], jwks)
    assert logout.header["typ"] == "logout+jwt"
    assert logout.claims["sid"] == claims["sid"]
    assert logout.claims["sub"] == claims["sub"]
    assert logout.claims["aud"] == service.app["client_id"]
    assert logout.claims["iss"] == service.url
    assert logout.claims["events"] == {"http://schemas.openid.net/event/backchannel-logout": {}}
    # max_age=0 with a live session: the sign-in page, then a code whose ID token openid-client held to max_age.
    assert steps["max_age"]["signin_page"] == "/auth/login"
    assert steps["max_age"]["claims"]["sub"] == claims["sub"]
    assert steps["max_age"]["claims"]["auth_time"] >= claims["auth_time"]
    assert steps["max_age"]["claims"]["sid"] != claims["sid"]


def test_openid_client_validates_es256_id_tokens_of_a_public_application(openid_client, service):
    steps = run_openid_client(openid_client, service, service.es256_app, "--id-token-alg", "ES256", "--no-logout")
    assert steps["token"]["id_token_header"]["alg"] == "ES256"
    assert steps["token"]["claims"]["aud"] == service.es256_app["client_id"]


def authlib_sign_in(service, logout=False):
    """Authlib's Flask client as the relying party, a requests.Session as the user's browser.

    With ``logout``, the relying party then sends the browser to the end_session_endpoint of the metadata.
    """
    rp = Flask("rp")
    rp.secret_key = "rp-secret-key"
    oauth = OAuth(rp)
    oauth.register(
        "authsvc",
        client_id=service.app["client_id"],
        client_secret=service.app["client_secret"],
        server_metadata_url=f"{service.url}/.well-known/openid-configuration",
        client_kwargs={"scope": SCOPES, "code_challenge_method": "S256"},
    )

    @rp.get("/login")
    def login():
        return oauth.authsvc.authorize_redirect(REDIRECT_URI)  # state, nonce and PKCE verifier in the RP's session

    @rp.get("/callback")
    def callback():
        token = oauth.authsvc.authorize_access_token()  # exchanges the code; validates the ID token
        info = oauth.authsvc.userinfo(token=token)
        refreshed = oauth.authsvc.fetch_access_token(grant_type="refresh_token", refresh_token=token["refresh_token"])
        refreshed_claims = oauth.authsvc.parse_id_token(refreshed, nonce=None)
        return jsonify(
            claims=token["userinfo"],
            userinfo=info,
            refreshed_claims=refreshed_claims,
            id_token=token["id_token"],
            access_token=token["access_token"],
        )

    @rp.get("/logout")
    def logout():
        # Authlib's client has no end-session helper: the endpoint comes from the metadata it loaded.
        endpoint = oauth.authsvc.load_server_metadata()["end_session_endpoint"]
        params = {"id_token_hint": request.args["id_token"], "post_logout_redirect_uri": POST_LOGOUT_REDIRECT_URI}
        return redirect(add_params_to_uri(endpoint, {**params, "state": "authlib-state"}))

    browser = requests.Session()
    signed_in = browser.post(
        f"{service.url}/auth/signin", data={"email": "alice@example.com", "password": PASSWORD}, timeout=10
    )
    assert signed_in.status_code == 202
    with rp.test_client() as rp_client:
        authorize_url = rp_client.get("/login").headers["Location"]
        at_provider = browser.get(authorize_url, allow_redirects=False, timeout=10)
        assert at_provider.status_code == 302, at_provider.text
        back = urlsplit(at_provider.headers["Location"])
        response = rp_client.get(f"/callback?{back.query}")
        assert response.status_code == 200, response.get_data(as_text=True)
        out = response.get_json()
        if logout:
            end_session = rp_client.get("/logout", query_string={"id_token": out["id_token"]}).headers["Location"]
            answer = browser.get(end_session, allow_redirects=False, timeout=10)
            out["logout"] = {"status": answer.status_code, "location": answer.headers.get("Location")}
            again = browser.get(authorize_url, allow_redirects=False, timeout=10)
            out["after_logout"] = urlsplit(again.headers["Location"]).path
        return out


def test_authlibs_client_with_server_metadata_url_signs_in_fetches_userinfo_refreshes_and_logs_out(service):
    out = authlib_sign_in(service, logout=True)
    claims = out["claims"]
    assert claims["iss"] == service.url
    assert claims["sub"] == out["userinfo"]["sub"] == out["refreshed_claims"]["sub"]
    assert out["userinfo"]["groups"] == []
    assert "nonce" in claims and "nonce" not in out["refreshed_claims"]
    assert out["refreshed_claims"]["auth_time"] == claims["auth_time"]
    # at_hash binds the ID token to its access token (OpenID Connect Core 3.1.3.6).
    CodeIDToken(claims, {"alg": "RS256"}, params={"access_token": out["access_token"]}).validate()
    assert out["logout"] == {"status": 303, "location": f"{POST_LOGOUT_REDIRECT_URI}?state=authlib-state"}
    assert out["after_logout"] == "/auth/login"  # the session is gone: authorising asks to sign in again


def test_tokens_signed_before_a_rotation_still_validate_and_new_ones_carry_the_new_kid(service):
    before = authlib_sign_in(service)["id_token"]
    old_kid = jws.extract_compact(before.encode()).protected["kid"]
    rotated = service.cli("keys", "rotate", "--domain", "127.0.0.1")
    assert rotated["kid"] != old_kid
    jwks = KeySet.import_key_set(requests.get(f"{service.url}/auth/oauth/jwks", timeout=10).json())
    assert jwt.decode(before, jwks).claims["iss"] == service.url
    after = authlib_sign_in(service)["id_token"]  # Authlib's client fetched the JWKS anew: the new kid is there
    assert jws.extract_compact(after.encode()).protected["kid"] == rotated["kid"]
    states = {k["kid"]: k["state"] for k in service.cli("keys", "list", "--domain", "127.0.0.1")["keys"]}
    assert states[old_kid] == "previous"
    assert states[rotated["kid"]] == "current"
