"""The FAPI 2.0 profile tests' world and requests (tests/api/fapi/test_fapi_profile*.py): the ``fapi`` fixture (the
profile's own domain HOST and a standard domain OTHER_HOST with the same applications), and the one place where
the client's requests are made: as the profile requires, ``authorize_request`` pushes an authorisation request
(RFC 9126, authenticated with private_key_jwt) and ``token_request`` sends, in the profile's domain, a DPoP proof
(RFC 9449), answering the nonce; ``refused`` and ``refused_at_push`` check a refusal that names the rule.
"""

from __future__ import annotations

import secrets
import time

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from authsvc.core.models import Application, Domain, User
from tests.helpers import HOST, OTHER_HOST, REDIRECT_URI, headers, location_params, pkce_pair, signin
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
            keyed = keyed_application(world, domain, service)
            secret_app, secret = world.application(domain, confidential=True, name="Secret")
            public_app, _ = world.application(domain, name="Public", require_pkce=True)
            person = world.user(domain, f"person@{host}", name="Person")

        Tenant.domain, Tenant.host, Tenant.service = domain, host, service
        return Tenant

    class Fapi:
        strict = tenant(HOST, "fapi2")
        standard = tenant(OTHER_HOST, "standard")

    return Fapi


def keyed_application(world, domain: Domain, service: User) -> Application:
    """An application that complies with the FAPI 2.0 profile: private_key_jwt, PKCE, acting as ``service``."""
    keyed, _ = world.application(
        domain,
        name="Keyed",
        token_endpoint_auth_method="private_key_jwt",
        jwks=JWKS,
        require_pkce=True,
        service_account_id=service.id,
        scopes="public mqtt.read openid",
    )
    return keyed


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


def exchange_code(client, tenant, code: str, verifier: str):
    """``tenant``'s keyed application exchanges ``code`` (from ``code_for``) with its PKCE ``verifier``."""
    return token_request(
        client,
        tenant.keyed,
        tenant.host,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT_URI,
        code_verifier=verifier,
    )


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


def with_proof(holder: Holder, token: str, url: str = INSPECT, host: str = HOST) -> dict:
    """The headers of a request that presents the DPoP-bound ``token`` (RFC 9449 7.1)."""
    proof = holder.proof(f"https://{host}{url}", "GET", access_token=token)
    return headers(host, Authorization=f"DPoP {token}", DPoP=proof)
