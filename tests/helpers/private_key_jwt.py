"""private_key_jwt for the tests: the keys an application registers, the assertions it signs, the token request that
carries one, and an application with those keys (the ``keyed`` fixture)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from authsvc.core.models import Application
from tests.helpers import HOST, headers

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


TOKEN_URL = f"https://{HOST}/auth/oauth/token"


RSA_KEY = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})


EC_KEY = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})


OTHER_KEY = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})  # same kid, another key


JWKS = {"keys": [RSA_KEY.as_dict(private=False), EC_KEY.as_dict(private=False)]}


@pytest.fixture
def keyed(world, setup) -> Application:
    application, _ = world.application(
        setup.domain,
        name="Keyed",
        redirect_uris=[],
        service_account_id=setup.service.id,
        token_endpoint_auth_method="private_key_jwt",
        jwks=JWKS,
    )
    return application


def assertion(client_id: str, key=RSA_KEY, alg: str = "RS256", **claims) -> str:
    now = int(time.time())
    body = {"iss": client_id, "sub": client_id, "aud": TOKEN_URL, "exp": now + 60, "iat": now}
    body["jti"] = secrets.token_urlsafe(12)
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    header = {"alg": alg}
    if key is not None and key.kid:
        header["kid"] = key.kid
    return jwt.encode(header, body, key, algorithms=[alg])


def token_request(client, signed: str, **extra):
    body = {"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE, "client_assertion": signed}
    return client.post("/auth/oauth/token", data={**body, **extra}, headers=headers())


def assert_invalid_client(response, fragment: str = "") -> None:
    assert response.status_code in (400, 401), response.get_json()
    body = response.get_json()
    assert body["error"] == "invalid_client"
    assert fragment in body["error_description"]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_made(header: dict, claims: dict, secret: bytes | None) -> str:
    """A JWT made without a library, which would refuse to make these."""
    signing_input = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest() if secret else b""
    return signing_input + "." + b64(signature)
