"""ID tokens in the code exchange and in refresh responses."""

import base64
import hashlib
import json
import time

from sqlalchemy import select

from authsvc.core import audit
from authsvc.core.models import Application, Token
from tests.helpers import HOST, REDIRECT_URI, authorize, get_code, headers, location_params, signin
from tests.helpers.id_tokens import exchange, refresh, verify


def at_hash(access_token):
    return base64.urlsafe_b64encode(hashlib.sha256(access_token.encode()).digest()[:16]).rstrip(b"=").decode()


def test_the_code_exchange_with_openid_returns_a_signed_id_token_with_the_core_claims(client, oidc):
    signin(client)
    signed_in_at = int(time.time())
    code = get_code(client, oidc.app.client_id, scope="openid", nonce="n-0S6_WzA2Mj")
    response = exchange(client, oidc.app, oidc.secret, code)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    header, claims = verify(client, body["id_token"])
    assert header["alg"] == "RS256"
    assert header["kid"] == client.get("/auth/oauth/jwks", headers=headers()).get_json()["keys"][0]["kid"]
    assert claims["iss"] == f"https://{HOST}"
    assert (
        claims["iss"] == client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()["issuer"]
    )
    assert claims["sub"] == str(oidc.person.id)
    assert claims["aud"] == oidc.app.client_id
    assert claims["azp"] == oidc.app.client_id
    assert claims["nonce"] == "n-0S6_WzA2Mj"
    assert claims["at_hash"] == at_hash(body["access_token"])
    assert claims["amr"] == ["pwd"]
    assert abs(claims["auth_time"] - signed_in_at) <= 2
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["sid"]
    # The sid names the session; it is not the session cookie.
    assert claims["sid"] != client.get_cookie("user", domain=HOST).value
    # openid alone: no profile, e-mail or group claims.
    assert not {"name", "email", "email_verified", "groups"} & set(claims)


def test_profile_email_and_groups_scopes_add_their_claims(client, oidc):
    signin(client)
    code = get_code(client, oidc.app.client_id, scope="openid profile email groups")
    _, claims = verify(client, exchange(client, oidc.app, oidc.secret, code).get_json()["id_token"])
    assert claims["name"] == "Person"
    assert claims["email"] == "person@example.com"
    assert claims["email_verified"] is True
    assert claims["groups"] == ["staff", "ops"]


def test_no_id_token_without_openid(client, oidc):
    signin(client)
    code = get_code(client, oidc.app.client_id, scope="public profile email")
    body = exchange(client, oidc.app, oidc.secret, code).get_json()
    assert "access_token" in body
    assert "id_token" not in body
    assert "id_token" not in refresh(client, oidc.app, oidc.secret, body["refresh_token"]).get_json()


def test_a_nonce_is_echoed_only_when_sent(client, oidc):
    signin(client)
    code = get_code(client, oidc.app.client_id, scope="openid")
    _, claims = verify(client, exchange(client, oidc.app, oidc.secret, code).get_json()["id_token"])
    assert "nonce" not in claims


def test_a_refresh_returns_a_fresh_id_token_for_the_same_sign_in(client, oidc, world):
    signin(client)
    code = get_code(client, oidc.app.client_id, scope="openid email", nonce="abc")
    first = exchange(client, oidc.app, oidc.secret, code).get_json()
    _, before = verify(client, first["id_token"])
    response = refresh(client, oidc.app, oidc.secret, first["refresh_token"])
    assert response.status_code == 200, response.get_json()
    second = response.get_json()
    _, after = verify(client, second["id_token"])
    for claim in ("iss", "sub", "aud", "azp", "auth_time", "sid", "amr", "email"):
        assert after[claim] == before[claim], claim
    assert after["at_hash"] == at_hash(second["access_token"])
    assert "nonce" not in after
    # The sign-in is stored with the token rows, for later refreshes.
    rows = world.query(select(Token).order_by(Token.id))
    assert [(r.auth_time, r.sid, r.amr) for r in rows] == [(before["auth_time"], before["sid"], ["pwd"])] * 2


def test_an_es256_application_gets_es256_id_tokens(client, oidc):
    signin(client)
    code = get_code(client, oidc.es256_app.client_id, scope="openid")
    header, claims = verify(client, exchange(client, oidc.es256_app, oidc.es256_secret, code).get_json()["id_token"])
    assert header["alg"] == "ES256"
    assert claims["aud"] == oidc.es256_app.client_id
    es256_kids = [
        k["kid"] for k in client.get("/auth/oauth/jwks", headers=headers()).get_json()["keys"] if k["alg"] == "ES256"
    ]
    assert header["kid"] in es256_kids


def test_the_cli_sets_an_applications_id_token_algorithm(runner, oidc, world):
    result = runner.invoke(
        args=[
            "apps",
            "create",
            "--domain",
            HOST,
            "--name",
            "ES",
            "--redirect-uri",
            REDIRECT_URI,
            "--scopes",
            "openid",
            "--id-token-alg",
            "ES256",
        ]
    )
    assert result.exit_code == 0, result.output
    client_id = json.loads(result.stdout)["client_id"]
    (app,) = world.query(select(Application).where(Application.client_id == client_id))
    assert app.id_token_signed_response_alg == "ES256"
    result = runner.invoke(
        args=[
            "apps",
            "create",
            "--domain",
            HOST,
            "--name",
            "Bad",
            "--redirect-uri",
            REDIRECT_URI,
            "--id-token-alg",
            "none",
        ]
    )
    assert result.exit_code != 0


def test_nonce_sid_and_openid_tokens_are_scrubbed_from_logs_and_audit_records():
    scrubbed = audit.scrub(
        {
            "nonce": "n",
            "sid": "s",
            "id_token": "eyJ",
            "id_token_hint": "eyJ",
            "logout_token": "eyJ",
            "client_id": "kept",
        }
    )
    assert scrubbed == {
        "nonce": "[redacted]",
        "sid": "[redacted]",
        "id_token": "[redacted]",
        "id_token_hint": "[redacted]",
        "logout_token": "[redacted]",
        "client_id": "kept",
    }


def test_the_nonce_is_not_in_the_services_logs(client, oidc, caplog):
    signin(client)
    with caplog.at_level("DEBUG"):
        code = get_code(client, oidc.app.client_id, scope="openid", nonce="secret-nonce-value")
        body = exchange(client, oidc.app, oidc.secret, code).get_json()
    assert "id_token" in body
    assert "secret-nonce-value" not in caplog.text


def test_prompt_none_gives_a_code_with_a_session_and_login_required_by_redirect_without(client, oidc):
    response = authorize(client, oidc.app.client_id, scope="openid", prompt="none", state="s1")
    assert response.status_code == 302
    assert location_params(response) == {
        "error": "login_required",
        "error_description": location_params(response)["error_description"],
        "state": "s1",
        "iss": f"https://{HOST}",
    }
    assert response.headers["Location"].startswith(REDIRECT_URI + "?")
    signin(client)
    response = authorize(client, oidc.app.client_id, scope="openid", prompt="none", state="s2")
    assert response.status_code == 302
    assert "code" in location_params(response)
