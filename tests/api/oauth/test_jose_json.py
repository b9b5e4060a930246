"""The JSON inside a signed token we verify: each member name once, every number finite.

A request object, a client assertion and a DPoP proof are JSON that a client signed. A member
named twice reads as one value here and maybe another elsewhere (RFC 7515 5.2, RFC 7519 4:
refuse it); NaN and Infinity are no JSON (RFC 8259 6), and an ``exp`` of NaN compares false with
every moment: it never expires. Each is refused as the token's own error, never a 500.
"""

from __future__ import annotations

import json
import secrets
import time

import pytest
from joserfc import jws
from joserfc.jwk import RSAKey
from joserfc.jws import JWSRegistry

from tests.helpers import HOST, REDIRECT_URI, headers
from tests.helpers.dpop import TOKEN_URL, Holder, b64
from tests.helpers.pushed_requests import assert_refused

ISSUER = f"https://{HOST}"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
KEY = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
JWKS = {"keys": [KEY.as_dict(private=False)]}

# Payload texts, made from a valid claim set: what json.dumps cannot make, edited in.
NAN, INFINITY, NEGATIVE_INFINITY, OVERFLOW = "NaN", "Infinity", "-Infinity", "1e400"


def signed(header: dict, payload: str) -> str:
    """A JWS over ``payload`` exactly as given (joserfc signs bytes as they are)."""
    return jws.serialize_compact({"kid": KEY.kid, **header}, payload.encode(), KEY, algorithms=[header["alg"]])


def with_number(claims: dict, name: str, number: str) -> str:
    return json.dumps({**claims, name: "@"}).replace('"@"', number)


def with_duplicate(claims: dict, name: str, value: object) -> str:
    return json.dumps(claims)[:-1] + f", {json.dumps(name)}: {json.dumps(value)}}}"


@pytest.fixture
def keyed(world, setup):
    """An application that authenticates with its keys and signs its request objects with them."""
    application, _ = world.application(
        setup.domain,
        name="Keyed",
        service_account_id=setup.service.id,
        token_endpoint_auth_method="private_key_jwt",
        jwks=JWKS,
    )
    return application


def assertion_claims(client_id: str, aud: str = f"{ISSUER}/auth/oauth/token") -> dict:
    now = int(time.time())
    return {"iss": client_id, "sub": client_id, "aud": aud, "exp": now + 60, "iat": now, "jti": secrets.token_hex(8)}


def assertion(client_id: str, **claims) -> str:
    return signed({"alg": "RS256"}, json.dumps({**assertion_claims(client_id), **claims}))


def request_object_claims(client_id: str) -> dict:
    now = int(time.time())
    return {
        "iss": client_id,
        "aud": ISSUER,
        "client_id": client_id,
        "response_type": "code",
        "redirect_uri": REDIRECT_URI,
        "scope": "public",
        "state": "signed-state",
        "exp": now + 300,
        "nbf": now,
    }


def push(client, application, payload: str):
    body = {
        "client_id": application.client_id,
        "request": signed({"alg": "RS256", "typ": "oauth-authz-req+jwt"}, payload),
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": assertion(application.client_id, aud=f"{ISSUER}/auth/oauth/par"),
    }
    return client.post("/auth/oauth/par", data=body, headers=headers())


def test_a_valid_hand_signed_request_object_is_pushed(client, keyed):
    """The tests below change one thing in this request."""
    response = push(client, keyed, json.dumps(request_object_claims(keyed.client_id)))
    assert response.status_code == 201, response.get_json()


@pytest.mark.parametrize("name", ["exp", "nbf", "max_age"])
@pytest.mark.parametrize("number", [NAN, NEGATIVE_INFINITY, OVERFLOW])
def test_a_number_that_is_not_finite_in_a_request_object_is_refused(client, keyed, name, number):
    payload = with_number(request_object_claims(keyed.client_id), name, number)
    assert_refused(push(client, keyed, payload), "invalid_request_object")


@pytest.mark.parametrize(("name", "value"), [("redirect_uri", "https://attacker.example/cb"), ("scope", "mqtt.read")])
def test_a_member_named_twice_in_a_request_object_is_refused(client, keyed, name, value):
    payload = with_duplicate(request_object_claims(keyed.client_id), name, value)
    assert_refused(push(client, keyed, payload), "invalid_request_object")


def assertion_request(client, signed_assertion: str):
    body = {"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE}
    return client.post("/auth/oauth/token", data={**body, "client_assertion": signed_assertion}, headers=headers())


def test_a_valid_hand_signed_assertion_authenticates(client, keyed):
    assert assertion_request(client, assertion(keyed.client_id)).status_code == 200


@pytest.mark.parametrize("name", ["exp", "nbf"])
@pytest.mark.parametrize("number", [NAN, INFINITY, OVERFLOW])
def test_a_number_that_is_not_finite_in_a_client_assertion_is_refused(client, keyed, name, number):
    payload = with_number(assertion_claims(keyed.client_id), name, number)
    response = assertion_request(client, signed({"alg": "RS256"}, payload))
    assert response.status_code in (400, 401), response.get_json()
    assert response.get_json()["error"] == "invalid_client"


@pytest.mark.parametrize(("name", "value"), [("aud", "https://elsewhere.example/token"), ("jti", "another")])
def test_a_member_named_twice_in_a_client_assertion_is_refused(client, keyed, name, value):
    payload = with_duplicate(assertion_claims(keyed.client_id), name, value)
    response = assertion_request(client, signed({"alg": "RS256"}, payload))
    assert response.status_code in (400, 401), response.get_json()
    assert response.get_json()["error"] == "invalid_client"


def test_a_member_named_twice_in_a_jose_header_is_refused(client, keyed):
    """The header is JSON the signature covers too: two ``alg`` or ``typ`` members are one too many."""
    good = signed({"alg": "RS256"}, json.dumps(assertion_claims(keyed.client_id)))
    _, payload, signature = good.split(".")
    twice = json.dumps({"alg": "RS256", "kid": KEY.kid})[:-1] + ', "alg": "none"}'
    forged = f"{b64(twice.encode())}.{payload}.{signature}"
    response = assertion_request(client, forged)
    assert response.status_code in (400, 401), response.get_json()
    assert response.get_json()["error"] == "invalid_client"


def dpop_request(client, public_app, proof: str):
    body = {"grant_type": "client_credentials", "client_id": public_app.client_id}
    return client.post("/auth/oauth/token", data=body, headers=headers(DPoP=proof))


@pytest.mark.parametrize("number", [NAN, INFINITY, OVERFLOW])
def test_a_number_that_is_not_finite_in_a_dpop_proof_is_refused(client, setup, number):
    holder = Holder()
    proof = _dpop_with_payload(holder, lambda claims: with_number(claims, "iat", number))
    response = dpop_request(client, setup.public_app, proof)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == "invalid_dpop_proof"


def test_a_member_named_twice_in_a_dpop_proof_is_refused(client, setup):
    holder = Holder()
    proof = _dpop_with_payload(holder, lambda claims: with_duplicate(claims, "htu", "https://elsewhere.example/t"))
    response = dpop_request(client, setup.public_app, proof)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == "invalid_dpop_proof"
    assert "JSON" in response.get_json()["error_description"]


def _dpop_with_payload(holder: Holder, edit) -> str:
    protected = {"typ": "dpop+jwt", "alg": holder.alg, "jwk": holder.jwk}
    claims = {"jti": secrets.token_urlsafe(16), "htm": "POST", "htu": TOKEN_URL, "iat": int(time.time())}
    signing_input = f"{b64(json.dumps(protected).encode())}.{b64(edit(claims).encode())}"
    signature = JWSRegistry.algorithms[holder.alg].sign(signing_input.encode(), holder.key)
    return f"{signing_input}.{b64(signature)}"
