"""private_key_jwt client authentication (RFC 7523 2.2, OpenID Connect Core 9).

The application registers its public keys (a JWKS) instead of a secret and signs
a short-lived assertion for each request. tests/e2e/test_machines_e2e.py runs the
same with Authlib's client under gunicorn, with the keys at a jwks_uri; which methods and keys an
application may register is tests/unit/test_client_authentication.py.
"""

from __future__ import annotations

import base64
import json
import secrets
import time

import pytest
from sqlalchemy import select

from authsvc.core.models import Application
from authsvc.oauth import client_authentication
from tests.fakes.slow_peer import SlowPeer
from tests.helpers import HOST, HttpsClient, headers
from tests.helpers import REDIRECT_URI as REDIRECT
from tests.helpers.admin_api import ADMIN_SCOPES, call
from tests.helpers.private_key_jwt import (
    ASSERTION_TYPE,
    EC_KEY,
    JWKS,
    OTHER_KEY,
    RSA_KEY,
    TOKEN_URL,
    assert_invalid_client,
    assertion,
    b64,
    hand_made,
    token_request,
)


@pytest.mark.parametrize(
    ("key", "alg", "aud"),
    [
        (RSA_KEY, "RS256", TOKEN_URL),
        (RSA_KEY, "PS256", TOKEN_URL),
        (EC_KEY, "ES256", f"https://{HOST}"),  # the issuer is an audience too
    ],
)
def test_a_signed_assertion_gets_a_token_acting_as_the_service_account(client, keyed, key, alg, aud):
    response = token_request(client, assertion(keyed.client_id, key, alg, aud=aud), scope="mqtt.read")
    assert response.status_code == 200, response.get_json()
    token = response.get_json()
    assert "refresh_token" not in token
    inspect = client.get(
        "/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token['access_token']}")
    )
    assert inspect.status_code == 200
    assert inspect.get_json()["u"]["e"] == "service@example.com"
    assert inspect.get_json()["client_id"] == keyed.client_id


@pytest.mark.parametrize(
    ("claims", "fragment"),
    [
        ({"aud": "https://elsewhere.example/token"}, "aud"),
        ({"aud": f"https://{HOST}/auth/oauth/introspect"}, "aud"),
        ({"exp": int(time.time()) - 120}, "expired"),
        ({"exp": None}, "exp"),
        ({"exp": int(time.time()) + 2 * 3600}, "seconds ahead"),
        ({"jti": None}, "JWT ID"),
        ({"iss": "somebody-else"}, ""),
    ],
)
def test_assertions_breaking_the_rules_are_refused(client, keyed, claims, fragment):
    assert_invalid_client(token_request(client, assertion(keyed.client_id, **claims)), fragment)


def test_a_jti_is_single_use(client, keyed):
    signed = assertion(keyed.client_id)
    assert token_request(client, signed).status_code == 200
    assert_invalid_client(token_request(client, signed), "JWT ID is used before")


def test_a_refused_assertion_does_not_spend_its_jti(client, keyed):
    jti = "kept-for-later"
    assert_invalid_client(token_request(client, assertion(keyed.client_id, exp=int(time.time()) + 7200, jti=jti)))
    assert token_request(client, assertion(keyed.client_id, jti=jti)).status_code == 200


def test_a_key_that_is_not_registered_is_refused(client, keyed):
    assert_invalid_client(token_request(client, assertion(keyed.client_id, OTHER_KEY)))


def claims_for(client_id: str) -> dict:
    return {
        "iss": client_id,
        "sub": client_id,
        "aud": TOKEN_URL,
        "exp": int(time.time()) + 60,
        "jti": secrets.token_hex(8),
    }


def test_hs256_with_the_public_key_as_secret_is_refused(client, keyed):
    # The classic confusion attack: the public key's PEM used as an HMAC secret.
    forged = hand_made({"alg": "HS256", "kid": "rsa-1"}, claims_for(keyed.client_id), RSA_KEY.as_pem(private=False))
    assert_invalid_client(token_request(client, forged), "HS256")


def test_alg_none_is_refused(client, keyed):
    assert_invalid_client(token_request(client, hand_made({"alg": "none"}, claims_for(keyed.client_id), None)))


def test_a_client_id_beside_the_assertion_must_name_the_same_client(client, keyed, setup):
    response = token_request(client, assertion(keyed.client_id), client_id=setup.confidential_app.client_id)
    assert_invalid_client(response, "client_id")


def test_a_keyed_application_cannot_use_a_secret_or_nothing(client, keyed):
    basic = "Basic " + base64.b64encode(f"{keyed.client_id}:anything".encode()).decode()
    response = client.post(
        "/auth/oauth/token", data={"grant_type": "client_credentials"}, headers=headers(Authorization=basic)
    )
    assert_invalid_client(response)
    response = client.post(
        "/auth/oauth/token", data={"grant_type": "client_credentials", "client_id": keyed.client_id}, headers=headers()
    )
    assert_invalid_client(response)


def test_a_secret_application_cannot_use_an_assertion(client, world, setup):
    app, _ = world.application(setup.domain, confidential=True, service_account_id=setup.service.id)
    assert_invalid_client(token_request(client, assertion(app.client_id)), "private_key_jwt")


def test_revocation_and_introspection_take_an_assertion(client, keyed):
    access = token_request(client, assertion(keyed.client_id)).get_json()["access_token"]
    form = {"client_assertion_type": ASSERTION_TYPE, "token": access}
    response = client.post(
        "/auth/oauth/introspect", data={**form, "client_assertion": assertion(keyed.client_id)}, headers=headers()
    )
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["active"] is True
    assert response.get_json()["client_id"] == keyed.client_id
    response = client.post(
        "/auth/oauth/revoke", data={**form, "client_assertion": assertion(keyed.client_id)}, headers=headers()
    )
    assert response.status_code == 200
    response = client.post(
        "/auth/oauth/introspect", data={**form, "client_assertion": assertion(keyed.client_id)}, headers=headers()
    )
    assert response.get_json() == {"active": False}
    replayed = assertion(keyed.client_id, jti="once")
    client.post("/auth/oauth/introspect", data={**form, "client_assertion": replayed}, headers=headers())
    response = client.post("/auth/oauth/introspect", data={**form, "client_assertion": replayed}, headers=headers())
    assert_invalid_client(response, "JWT ID")


def test_metadata_advertises_private_key_jwt(client, setup):
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        body = client.get(path, headers=headers()).get_json()
        for endpoint in ("token", "revocation", "introspection"):
            assert "private_key_jwt" in body[f"{endpoint}_endpoint_auth_methods_supported"]
            algs = body[f"{endpoint}_endpoint_auth_signing_alg_values_supported"]
            assert "RS256" in algs and "ES256" in algs
            assert not any(alg.startswith("HS") or alg == "none" for alg in algs)


def test_a_jwks_uri_that_trickles_is_cut_off_at_the_deadline(app, client, world, setup):
    app.config.update(AUTHSVC_OUTBOUND_DEADLINE=1, AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS=True)
    with SlowPeer(trickle=0.2) as peer:
        application, _ = world.application(
            setup.domain,
            name="Remote keys",
            redirect_uris=[],
            service_account_id=setup.service.id,
            token_endpoint_auth_method="private_key_jwt",
            jwks_uri=peer.url,
        )
        started = time.monotonic()
        response = token_request(client, assertion(application.client_id))
        assert time.monotonic() - started < 3
    assert_invalid_client(response, "jwks_uri could not be fetched")


def test_a_jwks_uri_answer_larger_than_a_jwks_may_be_is_refused_as_such(app, client, world, setup):
    app.config.update(AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS=True)
    with SlowPeer(size=client_authentication.JWKS_MAX_BYTES + 1) as peer:
        application, _ = world.application(
            setup.domain,
            name="Remote keys",
            redirect_uris=[],
            service_account_id=setup.service.id,
            token_endpoint_auth_method="private_key_jwt",
            jwks_uri=peer.url,
        )
        response = token_request(client, assertion(application.client_id))
    assert_invalid_client(response, f"larger than {client_authentication.JWKS_MAX_BYTES} bytes")


def test_the_exp_limit_is_a_setting(make_app, world, setup, keyed):
    strict = make_app(AUTHSVC_CLIENT_ASSERTION_MAX_LIFETIME=60)
    strict.test_client_class = HttpsClient
    client = strict.test_client()
    response = token_request(client, assertion(keyed.client_id, exp=int(time.time()) + 300))
    assert_invalid_client(response, "more than 60 seconds ahead")
    assert token_request(client, assertion(keyed.client_id, exp=int(time.time()) + 50)).status_code == 200


@pytest.fixture
def admin_key(world, setup) -> str:
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    return world.api_key(admin, scopes=ADMIN_SCOPES, permission="admin")


def test_the_admin_api_registers_keys_instead_of_a_secret(client, setup, admin_key):
    body = {"name": "Keyed robot", "service_account": str(setup.service.id), "jwks": JWKS}
    response = call(client, "post", "/oauth_apps", admin_key, body)
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert "client_secret" not in created
    assert created["confidential"] is True
    assert created["token_endpoint_auth_method"] == "private_key_jwt"
    assert created["jwks"] == JWKS
    assert token_request(client, assertion(created["client_id"])).status_code == 200
    # Rotation: the keys may change; the secret cannot be regenerated (there is none).
    rotated = {"keys": [EC_KEY.as_dict(private=False)]}
    response = call(client, "patch", f"/oauth_apps/{created['id']}", admin_key, {"jwks": rotated})
    assert response.status_code == 200, response.get_json()
    assert_invalid_client(token_request(client, assertion(created["client_id"])))
    assert token_request(client, assertion(created["client_id"], EC_KEY, "ES256")).status_code == 200
    assert call(client, "post", f"/oauth_apps/{created['id']}/regenerate", admin_key).status_code == 409


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"jwks": {"keys": [RSA_KEY.as_dict(private=True)]}}, "jwks"),
        ({"jwks_uri": "https://10.1.2.3/jwks"}, "jwks_uri"),
        ({"jwks_uri": "http://keys.example/jwks"}, "jwks_uri"),
        ({"jwks": JWKS, "confidential": False}, "confidential"),
    ],
)
def test_the_admin_api_refuses_bad_keys(client, setup, admin_key, body, field):
    response = call(client, "post", "/oauth_apps", admin_key, {"name": "Keyed", "redirect_uris": [REDIRECT], **body})
    assert response.status_code == 422, response.get_json()
    assert field in response.get_json()["fields"]


def test_a_secret_application_cannot_trade_its_secret_for_keys(client, setup, admin_key):
    path = f"/oauth_apps/{setup.confidential_app.id}"
    response = call(client, "patch", path, admin_key, {"jwks": JWKS})
    assert response.status_code == 422
    assert "jwks" in response.get_json()["fields"]


def test_the_cli_registers_a_jwks_file_and_refuses_a_private_key(runner, world, setup, tmp_path):
    public, private = tmp_path / "jwks.json", tmp_path / "private.json"
    public.write_text(json.dumps(JWKS))
    private.write_text(json.dumps({"keys": [RSA_KEY.as_dict(private=True)]}))
    common = ["apps", "create", "--domain", HOST, "--name", "Keyed", "--service-account", "service@example.com"]
    result = runner.invoke(args=[*common, "--jwks-file", str(public)])
    assert result.exit_code == 0, result.output
    created = json.loads(result.output)
    assert set(created) == {"id", "client_id"}
    [stored] = world.query(select(Application).where(Application.client_id == created["client_id"]))
    # Confidential without a secret: no PKCE required by default, as for any confidential application.
    assert stored.confidential and stored.client_secret_digest is None and not stored.require_pkce
    assert stored.jwks == JWKS
    result = runner.invoke(args=[*common, "--jwks-file", str(private)])
    assert result.exit_code != 0
    assert "private key material" in result.output
    result = runner.invoke(args=[*common, "--jwks-uri", "https://192.168.1.5/jwks"])
    assert result.exit_code != 0
    assert "private address" in result.output


@pytest.mark.parametrize(
    "mangle",
    [
        lambda c: "not-a-jwt",
        lambda c: "a.b.c",
        lambda c: hand_made({}, claims_for(c), None),
        lambda c: hand_made({"alg": "RS256", "kid": ["x"]}, claims_for(c), None),
        lambda c: assertion(c, exp="soon"),
        lambda c: assertion(c, aud={"a": 1}),
        lambda c: assertion(c, jti=["x"]),
        lambda c: assertion(c, sub=7, iss=7),
        lambda c: b64(b'{"alg":"RS256"}') + "." + b64(b"[" * 5000) + ".x",
        lambda c: b64(b'{"alg":"RS256","crit":["exp"]}') + "." + b64(json.dumps(claims_for(c)).encode()) + ".x",
    ],
)
def test_malformed_assertions_are_invalid_client_never_500(client, keyed, mangle):
    assert_invalid_client(token_request(client, mangle(keyed.client_id)))


def test_assertions_count_against_the_token_rate_limit_per_client(make_app, world, setup, keyed):
    limited = make_app(AUTHSVC_TOKEN_RATE_LIMIT="3/minute")
    limited.test_client_class = HttpsClient
    client = limited.test_client()
    other, _ = world.application(
        setup.domain,
        name="Other keyed",
        redirect_uris=[],
        service_account_id=setup.service.id,
        jwks=JWKS,
        token_endpoint_auth_method="private_key_jwt",
    )
    for _ in range(3):
        assert token_request(client, assertion(keyed.client_id)).status_code == 200
    assert token_request(client, assertion(keyed.client_id)).status_code == 429
    # Another application from the same address has its own count.
    assert token_request(client, assertion(other.client_id)).status_code == 200
