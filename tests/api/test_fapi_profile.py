"""Issue 26 point 6: a domain under the FAPI 2.0 Security Profile (docs/fapi.md) refuses, on every request,
what the profile forbids, naming the rule; a standard domain is unchanged.

The profile's own domain is HOST; OTHER_HOST is a standard domain with the same applications.
``authorize_request`` and ``token_request`` are the one place where the client's requests are made:
with pushed authorisation requests and DPoP (other branches of issue 26) they push and prove.
"""

from __future__ import annotations

import base64
import json
import secrets
import time

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from authsvc.core import security, store
from authsvc.core.models import Application, Domain
from tests.helpers import HOST, OTHER_HOST, PASSWORD, REDIRECT_URI, headers, location_params, pkce_pair, signin

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
KEY = RSAKey.generate_key(2048, parameters={"kid": "fapi-1"})
JWKS = {"keys": [KEY.as_dict(private=False)]}
INSPECT = "/api/engine/v2/api_keys/inspect"


@pytest.fixture
def fapi(world):
    """A FAPI 2.0 domain (HOST) and a standard one (OTHER_HOST), each with a private_key_jwt application, a
    secret one, a public one, a person and a service account."""

    def tenant(host: str, profile: str):
        domain = world.save(Domain(name=host, host=host, scopes="public mqtt.read openid", profile=profile))
        service = world.user(domain, f"service@{host}", service_account=True)

        class Tenant:
            keyed, _ = world.application(
                domain,
                name="Keyed",
                token_endpoint_auth_method="private_key_jwt",
                jwks=JWKS,
                require_pkce=True,
                service_account_id=service.id,
                scopes="public mqtt.read openid",
            )
            secret_app, secret = world.application(domain, confidential=True, name="Secret")
            public_app, _ = world.application(domain, name="Public", require_pkce=True)
            person = world.user(domain, f"person@{host}", name="Person")

        Tenant.domain, Tenant.host, Tenant.service = domain, host, service
        return Tenant

    class Fapi:
        strict = tenant(HOST, "fapi2")
        standard = tenant(OTHER_HOST, "standard")

    return Fapi


def assertion(client_id: str, host: str = HOST, aud: str | None = None, alg: str = "PS256") -> str:
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": aud or f"https://{host}", "exp": now + 60, "iat": now}
    claims["jti"] = secrets.token_urlsafe(12)
    return jwt.encode({"alg": alg, "kid": KEY.kid}, claims, KEY, algorithms=[alg])


def authorize_request(client, application: Application, host: str = HOST, **params):
    query = {"response_type": "code", "client_id": application.client_id, "redirect_uri": REDIRECT_URI}
    query.update(params)
    query = {k: v for k, v in query.items() if v is not None}
    return client.get("/auth/oauth/authorize", query_string=query, headers=headers(host))


def token_request(client, application: Application, host: str = HOST, query=None, **body):
    """A token request authenticated with private_key_jwt (an assertion for the issuer)."""
    data = {"client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion(application.client_id, host)}
    data.update(body)
    return client.post(
        "/auth/oauth/token",
        data={k: v for k, v in data.items() if v is not None},
        query_string=query,
        headers=headers(host),
    )


def code_for(client, tenant, **params) -> tuple[str, str]:
    """A code of ``tenant``'s keyed application, with S256 PKCE; (code, verifier)."""
    signin(client, tenant.person.email, host=tenant.host)
    verifier, challenge = pkce_pair()
    response = authorize_request(
        client, tenant.keyed, tenant.host, code_challenge=challenge, code_challenge_method="S256", **params
    )
    # FAPI 2.0 5.3.2.2 item 11: 303 under the profile.
    assert response.status_code == (303 if tenant.domain.fapi2 else 302), response.get_data(as_text=True)
    return location_params(response)["code"], verifier


def refused_at_authorize(response, error: str, anchor: str) -> None:
    """A refusal sent back to the client's redirect URI (RFC 6749 4.1.2.1), naming the rule and the issuer."""
    assert response.status_code == 303
    assert response.headers["Location"].startswith(REDIRECT_URI)
    params = location_params(response)
    assert params["error"] == error
    assert params["error_description"].startswith("FAPI 2.0 profile: ")
    assert f"docs/fapi.md#{anchor}" in params["error_description"]
    assert params["iss"] == f"https://{HOST}"


def refused(response, status: int, error: str, anchor: str) -> None:
    assert response.status_code == status, response.get_json()
    body = response.get_json()
    assert body["error"] == error
    assert body["error_description"].startswith("FAPI 2.0 profile: ")
    assert f"docs/fapi.md#{anchor}" in body["error_description"]


# The authorisation endpoint


def test_a_compliant_code_flow_works_and_names_the_issuer(client, fapi):
    code, verifier = code_for(client, fapi.strict, state="s1")
    response = token_request(
        client,
        fapi.strict.keyed,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT_URI,
        code_verifier=verifier,
    )
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["refresh_token"]


def test_the_authorization_response_carries_iss(client, fapi):
    signin(client, fapi.strict.person.email)
    _, challenge = pkce_pair()
    response = authorize_request(client, fapi.strict.keyed, code_challenge=challenge, code_challenge_method="S256")
    assert location_params(response)["iss"] == f"https://{HOST}"


@pytest.mark.parametrize("kind", ["public_app", "secret_app"])
def test_clients_without_private_key_jwt_are_refused_at_authorize(client, fapi, kind):
    signin(client, fapi.strict.person.email)
    _, challenge = pkce_pair()
    response = authorize_request(
        client, getattr(fapi.strict, kind), code_challenge=challenge, code_challenge_method="S256"
    )
    refused_at_authorize(response, "unauthorized_client", "client-authentication")


@pytest.mark.parametrize(
    ("params", "anchor_text"),
    [
        ({}, "PKCE with code_challenge_method S256 is required"),
        ({"code_challenge": "x" * 43}, "PKCE with code_challenge_method S256 is required"),
        ({"code_challenge": "x" * 43, "code_challenge_method": "plain"}, "plain is not allowed"),
    ],
)
def test_pkce_s256_is_required_even_where_the_application_says_otherwise(client, world, fapi, params, anchor_text):
    # Settings saved before the domain's switch (or written by hand) do not loosen the profile.
    world.update(Application, fapi.strict.keyed.id, require_pkce=False, allow_plain_pkce=True)
    signin(client, fapi.strict.person.email)
    response = authorize_request(client, fapi.strict.keyed, **params)
    refused_at_authorize(response, "invalid_request", "pkce")
    assert anchor_text in location_params(response)["error_description"]


def test_the_redirect_uri_must_be_named(client, fapi):
    signin(client, fapi.strict.person.email)
    _, challenge = pkce_pair()
    response = authorize_request(
        client, fapi.strict.keyed, redirect_uri=None, code_challenge=challenge, code_challenge_method="S256"
    )
    refused_at_authorize(response, "invalid_request", "authorization-requests")


def test_a_standard_domain_keeps_its_pkce_settings(client, world, fapi):
    world.update(Application, fapi.standard.keyed.id, require_pkce=False, allow_plain_pkce=True)
    signin(client, fapi.standard.person.email, host=OTHER_HOST)
    assert "code" in location_params(authorize_request(client, fapi.standard.keyed, OTHER_HOST))
    plain = authorize_request(
        client, fapi.standard.keyed, OTHER_HOST, code_challenge="x" * 43, code_challenge_method="plain"
    )
    assert "code" in location_params(plain)


def _code_ttl(app, code: str) -> int:
    with app.app_context():
        return store.client().ttl(f"{store.PREFIX}code:{security.digest(code)}")


def test_codes_live_sixty_seconds_at_most(app, client, fapi):
    code, _ = code_for(client, fapi.strict)
    assert 0 < _code_ttl(app, code) <= 60
    # A standard domain's codes keep AUTHSVC_CODE_TTL (300 s).
    code, _ = code_for(client, fapi.standard)
    assert _code_ttl(app, code) > 60


def test_the_metadata_offers_only_what_the_profile_allows(client, fapi):
    strict = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert strict["token_endpoint_auth_methods_supported"] == ["private_key_jwt"]
    assert strict["code_challenge_methods_supported"] == ["S256"]
    assert set(strict["grant_types_supported"]) == {"authorization_code", "refresh_token", "client_credentials"}
    assert "device_authorization_endpoint" not in strict
    assert strict["require_pushed_authorization_requests"] is True
    assert strict["authorization_response_iss_parameter_supported"] is True
    openid = client.get("/.well-known/openid-configuration", headers=headers()).get_json()
    assert openid["token_endpoint_auth_methods_supported"] == ["private_key_jwt"]
    standard = client.get("/.well-known/oauth-authorization-server", headers=headers(OTHER_HOST)).get_json()
    assert "password" in standard["grant_types_supported"]
    assert "plain" in standard["code_challenge_methods_supported"]


# The token endpoint


def test_a_secret_is_no_client_authentication_under_the_profile(client, fapi):
    strict, standard = fapi.strict, fapi.standard
    body = {"grant_type": "client_credentials", "client_secret": strict.secret}
    response = client.post(
        "/auth/oauth/token", data={**body, "client_id": strict.secret_app.client_id}, headers=headers()
    )
    refused(response, 401, "invalid_client", "client-authentication")
    # The same request to a standard domain fails only for want of a service account.
    response = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "client_credentials",
            "client_id": standard.secret_app.client_id,
            "client_secret": standard.secret,
        },
        headers=headers(OTHER_HOST),
    )
    assert response.get_json()["error"] == "unauthorized_client"


def test_a_public_client_cannot_exchange_a_code_under_the_profile(client, fapi):
    response = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": "whatever",
            "client_id": fapi.strict.public_app.client_id,
            "redirect_uri": REDIRECT_URI,
        },
        headers=headers(),
    )
    refused(response, 401, "invalid_client", "client-authentication")


def test_the_password_grant_is_refused(client, fapi):
    strict, standard = fapi.strict, fapi.standard
    body = {"grant_type": "password", "username": strict.service.email, "password": PASSWORD}
    refused(token_request(client, strict.keyed, **body), 400, "unauthorized_client", "grants")
    # A standard domain's service account still gets a token this way.
    body["username"] = standard.service.email
    assert token_request(client, standard.keyed, OTHER_HOST, **body).status_code == 200


def test_client_credentials_with_private_key_jwt_work(client, fapi):
    response = token_request(client, fapi.strict.keyed, grant_type="client_credentials", scope="mqtt.read")
    assert response.status_code == 200, response.get_json()


@pytest.mark.parametrize("name", ["scope", "code", "refresh_token"])
def test_no_token_request_parameter_may_come_in_the_query_string(client, fapi, name):
    response = token_request(client, fapi.strict.keyed, grant_type="client_credentials", query={name: "mqtt.read"})
    refused(response, 400, "invalid_request", "no-secrets-in-urls")
    # A standard domain reads the platform's parameters from the query string (docs/platform.md).
    response = token_request(
        client, fapi.standard.keyed, OTHER_HOST, grant_type="client_credentials", query={"scope": "mqtt.read"}
    )
    assert response.status_code == 200, response.get_json()


def test_a_client_assertion_names_the_issuer_alone(client, fapi):
    token_url = f"https://{HOST}/auth/oauth/token"
    signed = assertion(fapi.strict.keyed.client_id, aud=token_url)
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE, "client_assertion": signed},
        headers=headers(),
    )
    refused(response, 400, "invalid_client", "client-authentication")
    # A standard domain accepts its token endpoint as the audience too (OpenID Connect Core 9).
    signed = assertion(fapi.standard.keyed.client_id, aud=f"https://{OTHER_HOST}/auth/oauth/token")
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE, "client_assertion": signed},
        headers=headers(OTHER_HOST),
    )
    assert response.status_code == 200, response.get_json()


def test_client_assertions_are_signed_with_ps256_or_es256(client, fapi):
    def rs256(tenant):
        signed = assertion(tenant.keyed.client_id, tenant.host, alg="RS256")
        data = {"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE, "client_assertion": signed}
        return client.post("/auth/oauth/token", data=data, headers=headers(tenant.host))

    refused(rs256(fapi.strict), 400, "invalid_client", "algorithms")
    assert rs256(fapi.standard).status_code == 200


def test_id_tokens_are_signed_with_es256(client, fapi):
    code, verifier = code_for(client, fapi.strict, scope="openid")
    response = token_request(
        client,
        fapi.strict.keyed,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT_URI,
        code_verifier=verifier,
    )
    assert response.status_code == 200, response.get_json()
    header = response.get_json()["id_token"].split(".")[0]
    assert json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["alg"] == "ES256"


def test_the_device_grant_is_refused(client, world, fapi):
    world.update(Application, fapi.strict.keyed.id, device=True)
    data = {"client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion(fapi.strict.keyed.client_id)}
    response = client.post("/auth/oauth/device_authorization", data=data, headers=headers())
    refused(response, 400, "unauthorized_client", "grants")
    response = token_request(
        client, fapi.strict.keyed, grant_type="urn:ietf:params:oauth:grant-type:device_code", device_code="x"
    )
    refused(response, 400, "unauthorized_client", "grants")


# Credentials at the API (inspect, UserInfo)


def _access_token(client, tenant) -> str:
    response = token_request(client, tenant.keyed, tenant.host, grant_type="client_credentials", scope="mqtt.read")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["access_token"]


def test_access_tokens_are_accepted_in_the_authorization_header_only(client, fapi):
    token = _access_token(client, fapi.strict)
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 200
    response = client.get(INSPECT, query_string={"bearer_token": token}, headers=headers())
    refused(response, 400, "invalid_request", "no-secrets-in-urls")
    assert 'error="invalid_request"' in response.headers["WWW-Authenticate"]
    client.set_cookie("bearer_token", token, domain=HOST)
    refused(client.get(INSPECT, headers=headers()), 400, "invalid_request", "no-secrets-in-urls")
    refused(client.get("/auth/oauth/userinfo", headers=headers()), 400, "invalid_request", "no-secrets-in-urls")


def test_api_keys_are_accepted_in_their_header_only(client, world, fapi):
    key = world.api_key(fapi.strict.person)
    assert client.get(INSPECT, headers=headers(**{"X-API-Key": key})).status_code == 200
    refused(
        client.get(INSPECT, query_string={"api-key": key}, headers=headers()),
        400,
        "invalid_request",
        "no-secrets-in-urls",
    )


def test_a_standard_domain_still_reads_credentials_from_the_query_string_and_cookies(client, world, fapi):
    token = _access_token(client, fapi.standard)
    assert client.get(INSPECT, query_string={"bearer_token": token}, headers=headers(OTHER_HOST)).status_code == 200
    key = world.api_key(fapi.standard.person)
    assert client.get(INSPECT, query_string={"api-key": key}, headers=headers(OTHER_HOST)).status_code == 200


# Refresh tokens (FAPI 2.0 5.3.2.1 item 9: no rotation)


def _refresh_token(client, tenant) -> str:
    code, verifier = code_for(client, tenant)
    response = token_request(
        client,
        tenant.keyed,
        tenant.host,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT_URI,
        code_verifier=verifier,
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["refresh_token"]


def test_refresh_tokens_are_not_rotated_so_a_retry_succeeds(client, fapi):
    refresh_token = _refresh_token(client, fapi.strict)
    first = token_request(client, fapi.strict.keyed, grant_type="refresh_token", refresh_token=refresh_token)
    assert first.status_code == 200, first.get_json()
    assert "refresh_token" not in first.get_json()
    # The client lost that answer, or simply refreshes again later: the same refresh token still works.
    again = token_request(client, fapi.strict.keyed, grant_type="refresh_token", refresh_token=refresh_token)
    assert again.status_code == 200, again.get_json()
    inspect = client.get(INSPECT, headers=headers(Authorization=f"Bearer {again.get_json()['access_token']}"))
    assert inspect.status_code == 200


def test_a_revoked_refresh_token_stays_revoked(client, fapi):
    refresh_token = _refresh_token(client, fapi.strict)
    data = {
        "token": refresh_token,
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": assertion(fapi.strict.keyed.client_id),
    }
    assert client.post("/auth/oauth/revoke", data=data, headers=headers()).status_code == 200
    response = token_request(client, fapi.strict.keyed, grant_type="refresh_token", refresh_token=refresh_token)
    assert response.get_json()["error"] == "invalid_grant"


def test_a_standard_domain_still_rotates_refresh_tokens(client, fapi):
    refresh_token = _refresh_token(client, fapi.standard)
    first = token_request(
        client, fapi.standard.keyed, OTHER_HOST, grant_type="refresh_token", refresh_token=refresh_token
    )
    assert first.get_json()["refresh_token"] != refresh_token
    again = token_request(
        client, fapi.standard.keyed, OTHER_HOST, grant_type="refresh_token", refresh_token=refresh_token
    )
    assert again.get_json()["error"] == "invalid_grant"
