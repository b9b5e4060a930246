"""JWT access tokens (RFC 9068) per application: signed with the domain's key, and revocable like opaque ones."""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import parse_qs, urlsplit

from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import Token
from tests.helpers import HOST, REDIRECT_URI, get_code, headers, signin

ISSUER = f"https://{HOST}"


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def code_flow(client, app, secret, scope="public", **token_params):
    signin(client)
    code = get_code(client, app.client_id, scope=scope)
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, **token_params},
        headers=headers(Authorization=basic(app.client_id, secret)),
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def verified(client, token: str):
    """The token decoded with the keys the domain publishes, as a resource server would."""
    jwks = client.get("/auth/oauth/jwks", headers=headers()).get_json()
    return jwt.decode(token, KeySet.import_key_set(jwks), algorithms=["RS256", "ES256"])


def inspect(client, token: str):
    return client.get("/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token}"))


def introspect(client, app, secret, token: str):
    return client.post(
        "/auth/oauth/introspect",
        data={"token": token},
        headers=headers(Authorization=basic(app.client_id, secret)),
    )


def test_a_jwt_application_gets_a_signed_at_jwt_with_the_rfc_9068_claims(client, world, setup):
    app, secret = world.application(setup.domain, confidential=True, access_token_format="jwt")
    body = code_flow(client, app, secret, scope="public mqtt.read")
    decoded = verified(client, body["access_token"])
    assert decoded.header["typ"] == "at+jwt"
    assert decoded.header["alg"] == "RS256"
    claims = decoded.claims
    assert claims["iss"] == ISSUER
    assert claims["aud"] == HOST  # no resource asked: the domain, as inspect says
    assert claims["sub"] == str(setup.person.id)
    assert claims["client_id"] == app.client_id
    assert claims["scope"] == "public mqtt.read"
    assert claims["exp"] - claims["iat"] == body["expires_in"]
    assert claims["iat"] == body["created_at"]
    assert claims["jti"]
    assert isinstance(claims["auth_time"], int)
    assert "cnf" not in claims
    assert body["token_type"] == "bearer"
    # Refresh tokens stay opaque.
    assert body["refresh_token"].count(".") == 0


def test_each_jwt_has_its_own_jti_and_a_refresh_keeps_the_sign_in(client, world, setup):
    app, secret = world.application(setup.domain, confidential=True, access_token_format="jwt")
    body = code_flow(client, app, secret)
    refreshed = client.post(
        "/auth/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"]},
        headers=headers(Authorization=basic(app.client_id, secret)),
    )
    assert refreshed.status_code == 200, refreshed.get_json()
    first = verified(client, body["access_token"]).claims
    second = verified(client, refreshed.get_json()["access_token"]).claims
    assert first["jti"] != second["jti"]
    assert second["auth_time"] == first["auth_time"]
    assert second["sub"] == first["sub"]


def test_the_application_chooses_es256_as_for_its_id_tokens(client, world, setup):
    app, secret = world.application(
        setup.domain, confidential=True, access_token_format="jwt", id_token_signed_response_alg="ES256"
    )
    decoded = verified(client, code_flow(client, app, secret)["access_token"])
    assert decoded.header["alg"] == "ES256"
    jwks = client.get("/auth/oauth/jwks", headers=headers()).get_json()
    assert decoded.header["kid"] in {key["kid"] for key in jwks["keys"]}


def test_client_credentials_jwt_names_the_client_as_subject(client, world, setup):
    app, secret = world.application(
        setup.domain, confidential=True, access_token_format="jwt", service_account_id=setup.service.id
    )
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials"},
        headers=headers(Authorization=basic(app.client_id, secret)),
    )
    assert response.status_code == 200, response.get_json()
    claims = verified(client, response.get_json()["access_token"]).claims
    assert claims["sub"] == app.client_id
    assert claims["client_id"] == app.client_id
    assert "auth_time" not in claims
    # Inspect still says who the token acts as.
    assert inspect(client, response.get_json()["access_token"]).get_json()["u"]["e"] == "service@example.com"


def test_only_the_digest_of_a_jwt_is_stored(client, world, setup):
    app, secret = world.application(setup.domain, confidential=True, access_token_format="jwt")
    token = code_flow(client, app, secret)["access_token"]
    rows = world.query(select(Token).where(Token.application_id == app.id))
    assert [row.access_token_digest for row in rows] == [security.digest(token)]
    assert len(rows[0].access_token_digest) == 64
    assert hashlib.sha256(token.encode()).hexdigest() == rows[0].access_token_digest


def test_inspect_introspection_and_userinfo_accept_a_live_jwt(client, oidc, world):
    app, secret = world.application(
        oidc.domain, confidential=True, access_token_format="jwt", scopes="public openid email"
    )
    token = code_flow(client, app, secret, scope="openid email")["access_token"]
    looked = inspect(client, token)
    assert looked.status_code == 200, looked.get_json()
    assert looked.get_json()["client_id"] == app.client_id
    assert looked.get_json()["aud"] == HOST
    described = introspect(client, app, secret, token).get_json()
    assert described["active"] is True
    assert described["client_id"] == app.client_id
    userinfo = client.get("/auth/oauth/userinfo", headers=headers(Authorization=f"Bearer {token}"))
    assert userinfo.status_code == 200, userinfo.get_json()
    assert userinfo.get_json()["email"] == "person@example.com"


def test_a_revoked_jwt_is_refused_at_once_although_its_signature_still_verifies(client, oidc, world):
    app, secret = world.application(
        oidc.domain, confidential=True, access_token_format="jwt", scopes="public openid email"
    )
    token = code_flow(client, app, secret, scope="openid email")["access_token"]
    revoked = client.post(
        "/auth/oauth/revoke", data={"token": token}, headers=headers(Authorization=basic(app.client_id, secret))
    )
    assert revoked.status_code == 200
    assert verified(client, token).claims["client_id"] == app.client_id
    assert inspect(client, token).status_code == 401
    assert introspect(client, app, secret, token).get_json() == {"active": False}
    userinfo = client.get("/auth/oauth/userinfo", headers=headers(Authorization=f"Bearer {token}"))
    assert userinfo.status_code == 401


def test_an_id_token_hashes_the_jwt_it_was_issued_with(client, oidc, world):
    app, secret = world.application(oidc.domain, confidential=True, access_token_format="jwt", scopes="public openid")
    body = code_flow(client, app, secret, scope="openid")
    id_token = verified(client, body["id_token"]).claims
    digest = hashlib.sha256(body["access_token"].encode()).digest()
    assert id_token["at_hash"] == base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def test_opaque_stays_the_default(client, world, setup):
    app, secret = world.application(setup.domain, confidential=True)
    body = code_flow(client, app, secret)
    assert "." not in body["access_token"]
    assert inspect(client, body["access_token"]).get_json()["aud"] == HOST


def test_a_jwt_access_token_is_no_id_token_hint(client, oidc, world):
    """Any resource server holds the user's access tokens: one taken as an ID token hint would sign the user out
    without asking, or stand for the user at the authorisation endpoint. Signed by the same keys, it is told
    apart by its ``typ`` (RFC 9068 2.1, at+jwt)."""
    app, secret = world.application(oidc.domain, confidential=True, access_token_format="jwt", scopes="public openid")
    body = code_flow(client, app, secret, scope="openid")
    access_token = body["access_token"]
    assert verified(client, access_token).header["typ"] == "at+jwt"
    logout = client.get("/auth/oauth/end_session", query_string={"id_token_hint": access_token}, headers=headers())
    assert logout.status_code == 400, logout.get_data(as_text=True)
    assert logout.get_json()["error"] == "invalid_request"
    assert client.get_cookie("user", domain=HOST) is not None
    query = {
        "client_id": app.client_id,
        "response_type": "code",
        "redirect_uri": REDIRECT_URI,
        "scope": "openid",
        "state": "s",
        "id_token_hint": access_token,
    }
    refused = client.get("/auth/oauth/authorize", query_string=query, headers=headers())
    assert refused.status_code == 302
    assert parse_qs(urlsplit(refused.headers["Location"]).query)["error"] == ["invalid_request"]
    # The ID token of the same exchange is still a hint.
    signed_out = client.get(
        "/auth/oauth/end_session", query_string={"id_token_hint": body["id_token"]}, headers=headers()
    )
    assert signed_out.status_code in (200, 303), signed_out.get_data(as_text=True)
