"""Issue 26 point 6: a domain under the FAPI 2.0 Security Profile (docs/fapi.md) refuses, on every request,
what the profile forbids, naming the rule; a standard domain is unchanged.

The profile's own domain is HOST; OTHER_HOST is a standard domain with the same applications.
``authorize_request`` and ``token_request`` are the one place where the client's requests are made: as
the profile requires, an authorisation request is pushed (RFC 9126, authenticated with private_key_jwt)
and a token request in the profile's domain carries a DPoP proof (RFC 9449), answering the nonce.
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
from tests.helpers.dpop import Holder

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
KEY = RSAKey.generate_key(2048, parameters={"kid": "fapi-1"})
JWKS = {"keys": [KEY.as_dict(private=False)]}
INSPECT = "/api/engine/v2/api_keys/inspect"
# A token request's holder: a new key in the profile's domain, no proof in a standard one.
AUTO = "auto"


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


def client_authentication(application: Application, host: str = HOST) -> dict[str, str]:
    """private_key_jwt's parameters: a new assertion for the issuer."""
    return {"client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion(application.client_id, host)}


def push(client, application: Application, host: str = HOST, *, auth: dict | None = None, **params):
    """POST an authorisation request to PAR (RFC 9126), authenticated with private_key_jwt unless ``auth`` (the
    body's authentication, or {} for none) says otherwise."""
    body = {"response_type": "code", "redirect_uri": REDIRECT_URI, **params}
    body.update(client_authentication(application, host) if auth is None else auth)
    body = {k: v for k, v in body.items() if v is not None}
    return client.post("/auth/oauth/par", data=body, headers=headers(host))


def authorize_request(client, application: Application, host: str = HOST, *, pushed: bool = True, **params):
    """An authorisation request: pushed first (the browser carries only client_id and request_uri), or
    (``pushed=False``) in the query. A refused push is returned as it is (JSON, RFC 9126 2.3)."""
    if not pushed:
        query = {"response_type": "code", "client_id": application.client_id, "redirect_uri": REDIRECT_URI}
        query.update(params)
        query = {k: v for k, v in query.items() if v is not None}
        return client.get("/auth/oauth/authorize", query_string=query, headers=headers(host))
    response = push(client, application, host, **params)
    if response.status_code != 201:
        return response
    query = {"client_id": application.client_id, "request_uri": response.get_json()["request_uri"]}
    return client.get("/auth/oauth/authorize", query_string=query, headers=headers(host))


def holder_for(host: str, holder) -> Holder | None:
    if holder == AUTO:
        return Holder() if host == HOST else None
    return holder


def token_post(client, host: str = HOST, query=None, holder=AUTO, **data):
    """POST ``data`` to the token endpoint; in the profile's domain with a DPoP proof, retried once with the
    server's nonce (use_dpop_nonce) as a DPoP client does."""
    holder = holder_for(host, holder)
    for _ in range(2):
        extra = {"DPoP": holder.proof(f"https://{host}/auth/oauth/token")} if holder else {}
        response = client.post(
            "/auth/oauth/token",
            data={k: v() if callable(v) else v for k, v in data.items() if v is not None},
            query_string=query,
            headers=headers(host, **extra),
        )
        if holder is None or response.status_code != 400 or response.get_json()["error"] != "use_dpop_nonce":
            return response
        holder.remember(response)
    return response


def token_request(client, application: Application, host: str = HOST, query=None, holder=AUTO, **body):
    """A token request authenticated with private_key_jwt (a new assertion for the issuer on each try)."""
    return token_post(
        client,
        host,
        query,
        holder,
        client_assertion_type=ASSERTION_TYPE,
        client_assertion=lambda: assertion(application.client_id, host),
        **body,
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


def refused_at_push(response, error: str, anchor: str, status: int = 400) -> None:
    """A refusal of a pushed request: to the application that pushed, as JSON (RFC 9126 2.3), naming the rule."""
    assert "Location" not in response.headers
    refused(response, status, error, anchor)


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
    assert response.status_code == 303
    assert location_params(response)["iss"] == f"https://{HOST}"


def test_an_error_response_at_authorize_carries_iss_too(client, fapi):
    # No session and prompt=none: the pushed request is answered at the redirect URI (RFC 9207, 303).
    _, challenge = pkce_pair()
    response = authorize_request(
        client, fapi.strict.keyed, code_challenge=challenge, code_challenge_method="S256", prompt="none", state="s2"
    )
    assert response.status_code == 303, response.get_data(as_text=True)
    assert response.headers["Location"].startswith(REDIRECT_URI)
    params = location_params(response)
    assert params["error"] == "login_required"
    assert params["state"] == "s2"
    assert params["iss"] == f"https://{HOST}"


def test_an_authorization_request_that_is_not_pushed_is_refused(client, fapi):
    signin(client, fapi.strict.person.email)
    _, challenge = pkce_pair()
    query = {"code_challenge": challenge, "code_challenge_method": "S256"}
    response = authorize_request(client, fapi.strict.keyed, pushed=False, **query)
    refused(response, 400, "invalid_request", "authorization-requests")
    assert "/auth/oauth/par" in response.get_json()["error_description"]
    # Whatever the application's own setting says; a standard domain takes the same request in the query.
    assert fapi.strict.keyed.require_pushed_authorization_requests is False
    signin(client, fapi.standard.person.email, host=OTHER_HOST)
    response = authorize_request(client, fapi.standard.keyed, OTHER_HOST, pushed=False, **query)
    assert "code" in location_params(response)


@pytest.mark.parametrize("kind", ["public_app", "secret_app"])
def test_clients_without_private_key_jwt_cannot_push(client, fapi, kind):
    application = getattr(fapi.strict, kind)
    auth = {"client_id": application.client_id}
    if kind == "secret_app":
        auth["client_secret"] = fapi.strict.secret
    _, challenge = pkce_pair()
    response = push(client, application, auth=auth, code_challenge=challenge, code_challenge_method="S256")
    refused_at_push(response, "invalid_client", "client-authentication", status=401)
    # Nor may they send the request in the query instead.
    signin(client, fapi.strict.person.email)
    response = authorize_request(
        client, application, pushed=False, code_challenge=challenge, code_challenge_method="S256"
    )
    refused(response, 400, "invalid_request", "authorization-requests")


def test_a_push_names_the_issuer_alone_as_its_assertions_audience(client, fapi):
    # RFC 9126 2 lets an assertion name PAR's URL; the profile does not (5.3.2.1 item 8).
    _, challenge = pkce_pair()
    signed = assertion(fapi.strict.keyed.client_id, aud=f"https://{HOST}/auth/oauth/par")
    auth = {"client_assertion_type": ASSERTION_TYPE, "client_assertion": signed}
    response = push(client, fapi.strict.keyed, auth=auth, code_challenge=challenge, code_challenge_method="S256")
    refused_at_push(response, "invalid_client", "client-authentication")


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
    response = authorize_request(client, fapi.strict.keyed, **params)
    refused_at_push(response, "invalid_request", "pkce")
    assert anchor_text in response.get_json()["error_description"]


def test_the_redirect_uri_must_be_named(client, fapi):
    _, challenge = pkce_pair()
    response = authorize_request(
        client, fapi.strict.keyed, redirect_uri=None, code_challenge=challenge, code_challenge_method="S256"
    )
    refused_at_push(response, "invalid_request", "authorization-requests")


def test_a_standard_domain_keeps_its_pkce_settings(client, world, fapi):
    world.update(Application, fapi.standard.keyed.id, require_pkce=False, allow_plain_pkce=True)
    signin(client, fapi.standard.person.email, host=OTHER_HOST)
    for pushed in (True, False):
        assert "code" in location_params(authorize_request(client, fapi.standard.keyed, OTHER_HOST, pushed=pushed))
        plain = authorize_request(
            client,
            fapi.standard.keyed,
            OTHER_HOST,
            pushed=pushed,
            code_challenge="x" * 43,
            code_challenge_method="plain",
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
    # With a DPoP proof, as the profile asks: the secret alone is what is refused.
    response = token_post(client, **body, client_id=strict.secret_app.client_id)
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
    response = token_post(
        client,
        grant_type="authorization_code",
        code="whatever",
        client_id=fapi.strict.public_app.client_id,
        redirect_uri=REDIRECT_URI,
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
    response = token_post(
        client,
        grant_type="client_credentials",
        client_assertion_type=ASSERTION_TYPE,
        client_assertion=lambda: assertion(fapi.strict.keyed.client_id, aud=token_url),
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
        return token_post(
            client,
            tenant.host,
            grant_type="client_credentials",
            client_assertion_type=ASSERTION_TYPE,
            client_assertion=lambda: assertion(tenant.keyed.client_id, tenant.host, alg="RS256"),
        )

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


def _access_token(client, tenant, holder: Holder | None = None) -> str:
    """A client credentials token of ``tenant``: DPoP-bound to ``holder`` in the profile's domain."""
    response = token_request(
        client, tenant.keyed, tenant.host, holder=holder or AUTO, grant_type="client_credentials", scope="mqtt.read"
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["access_token"]


def with_proof(holder: Holder, token: str, url: str = INSPECT, host: str = HOST) -> dict:
    """The headers of a request that presents the DPoP-bound ``token`` (RFC 9449 7.1)."""
    proof = holder.proof(f"https://{host}{url}", "GET", access_token=token)
    return headers(host, Authorization=f"DPoP {token}", DPoP=proof)


def test_access_tokens_are_accepted_in_the_authorization_header_only(client, fapi):
    holder = Holder()
    token = _access_token(client, fapi.strict, holder)
    assert client.get(INSPECT, headers=with_proof(holder, token)).status_code == 200
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
    holder = Holder()
    refresh_token = _refresh_token(client, fapi.strict)
    first = token_request(
        client, fapi.strict.keyed, holder=holder, grant_type="refresh_token", refresh_token=refresh_token
    )
    assert first.status_code == 200, first.get_json()
    assert first.get_json()["token_type"] == "DPoP"
    assert "refresh_token" not in first.get_json()
    # The client lost that answer, or simply refreshes again later: the same refresh token still works.
    again = token_request(
        client, fapi.strict.keyed, holder=holder, grant_type="refresh_token", refresh_token=refresh_token
    )
    assert again.status_code == 200, again.get_json()
    inspect = client.get(INSPECT, headers=with_proof(holder, again.get_json()["access_token"]))
    assert inspect.status_code == 200, inspect.get_json()
    assert inspect.get_json()["cnf"] == {"jkt": holder.jkt}


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


# Sender-constrained tokens (DPoP, RFC 9449) and their algorithms


def test_a_token_request_without_a_dpop_proof_is_refused(client, fapi):
    response = token_request(client, fapi.strict.keyed, holder=None, grant_type="client_credentials")
    refused(response, 400, "invalid_request", "sender-constrained-tokens")
    # Whatever the application's own setting says; a standard domain issues a bearer token.
    assert fapi.strict.keyed.dpop_bound_access_tokens is False
    response = token_request(client, fapi.standard.keyed, OTHER_HOST, holder=None, grant_type="client_credentials")
    assert response.get_json()["token_type"] == "bearer"


def test_a_code_exchange_without_a_proof_is_refused_and_the_code_survives(client, fapi):
    code, verifier = code_for(client, fapi.strict)
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    exchange["code_verifier"] = verifier
    refused(
        token_request(client, fapi.strict.keyed, holder=None, **exchange),
        400,
        "invalid_request",
        "sender-constrained-tokens",
    )
    holder = Holder()
    response = token_request(client, fapi.strict.keyed, holder=holder, **exchange)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["token_type"] == "DPoP"


@pytest.mark.parametrize("alg", ["ES256", "PS256", "EdDSA"])
def test_dpop_proofs_with_the_profiles_algorithms_are_accepted(client, fapi, alg):
    response = token_request(client, fapi.strict.keyed, holder=Holder(alg), grant_type="client_credentials")
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["token_type"] == "DPoP"


def test_an_rs256_dpop_proof_is_refused_under_the_profile(client, fapi):
    response = token_request(client, fapi.strict.keyed, holder=Holder("RS256"), grant_type="client_credentials")
    refused(response, 400, "invalid_dpop_proof", "algorithms")
    assert "RS256" in response.get_json()["error_description"]
    # A standard domain takes it (RFC 9449 lists RS256).
    response = token_request(
        client, fapi.standard.keyed, OTHER_HOST, holder=Holder("RS256"), grant_type="client_credentials"
    )
    assert response.get_json()["token_type"] == "DPoP"
    # Nor is it taken at PAR.
    _, challenge = pkce_pair()
    rs256 = Holder("RS256")
    for _ in range(2):
        proof = rs256.proof(f"https://{HOST}/auth/oauth/par")
        body = {"response_type": "code", "redirect_uri": REDIRECT_URI, "code_challenge": challenge}
        body |= {"code_challenge_method": "S256", **client_authentication(fapi.strict.keyed)}
        pushed = rs256.remember(client.post("/auth/oauth/par", data=body, headers=headers(DPoP=proof)))
    refused_at_push(pushed, "invalid_dpop_proof", "algorithms")


def test_a_token_bound_to_an_rs256_key_before_the_switch_needs_the_profiles_algorithms(client, world, fapi):
    # A token of a standard domain bound to an RSA key with RS256; then the domain switches to the profile.
    holder = Holder("RS256")
    response = token_request(
        client, fapi.standard.keyed, OTHER_HOST, holder=holder, grant_type="client_credentials", scope="mqtt.read"
    )
    token = response.get_json()["access_token"]
    assert client.get(INSPECT, headers=with_proof(holder, token, host=OTHER_HOST)).status_code == 200
    world.update(Domain, fapi.standard.domain.id, profile="fapi2")
    response = client.get(INSPECT, headers=with_proof(holder, token, host=OTHER_HOST))
    refused(response, 401, "invalid_dpop_proof", "algorithms")
    assert 'algs="ES256 PS256 EdDSA Ed25519"' in response.headers["WWW-Authenticate"]


def test_a_dpop_proof_at_par_binds_the_code(client, fapi):
    holder = Holder()
    verifier, challenge = pkce_pair()
    params = {"response_type": "code", "redirect_uri": REDIRECT_URI}
    params |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    for _ in range(2):  # the nonce first
        body = {**params, **client_authentication(fapi.strict.keyed)}
        pushed = client.post(
            "/auth/oauth/par", data=body, headers=headers(DPoP=holder.proof(f"https://{HOST}/auth/oauth/par"))
        )
        holder.remember(pushed)
    assert pushed.status_code == 201, pushed.get_json()
    signin(client, fapi.strict.person.email)
    query = {"client_id": fapi.strict.keyed.client_id, "request_uri": pushed.get_json()["request_uri"]}
    code = location_params(client.get("/auth/oauth/authorize", query_string=query, headers=headers()))["code"]
    # Another key is refused: the code is bound to the one that pushed.
    response = token_request(
        client,
        fapi.strict.keyed,
        holder=Holder(),
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT_URI,
        code_verifier=verifier,
    )
    assert response.get_json()["error"] == "invalid_grant"
    assert "dpop_jkt" in response.get_json()["error_description"]


def test_the_metadata_offers_the_profiles_dpop_algorithms(client, fapi):
    strict = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert "RS256" not in strict["dpop_signing_alg_values_supported"]
    assert {"ES256", "PS256", "EdDSA"} <= set(strict["dpop_signing_alg_values_supported"])
    standard = client.get("/.well-known/oauth-authorization-server", headers=headers(OTHER_HOST)).get_json()
    assert "RS256" in standard["dpop_signing_alg_values_supported"]


def test_jwt_access_tokens_are_signed_with_es256_and_name_their_key(client, world, fapi):
    # Even where the application asks RS256 for its ID tokens (a row kept from before the switch).
    for tenant in (fapi.strict, fapi.standard):
        world.update(Application, tenant.keyed.id, access_token_format="jwt", id_token_signed_response_alg="RS256")
    holder = Holder()
    token = _access_token(client, fapi.strict, holder)
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=" * (-len(token.split(".")[0]) % 4)))
    assert header["alg"] == "ES256"
    assert header["typ"] == "at+jwt"
    payload = token.split(".")[1]
    assert json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["cnf"] == {"jkt": holder.jkt}
    standard = _access_token(client, fapi.standard).split(".")[0]
    assert json.loads(base64.urlsafe_b64decode(standard + "=" * (-len(standard) % 4)))["alg"] == "RS256"
