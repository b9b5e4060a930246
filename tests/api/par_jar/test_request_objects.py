"""Request objects (RFC 9101), by value at the authorisation endpoint and at PAR.

The application signs its request with a key it registered for private_key_jwt
(joserfc makes the JWTs, as a client library would); the object's parameters
replace the query's. Everything about the object that is wrong is refused to
the caller as ``invalid_request_object``, never redirected: its redirect_uri
cannot be trusted.
"""

from __future__ import annotations

import secrets
import time

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from tests.helpers import HOST, REDIRECT_URI, authorize, headers, location_params, pkce_pair, signin
from tests.helpers.oidc_authorize import redirected_error, sign_in_through
from tests.helpers.private_key_jwt import ASSERTION_TYPE, EC_KEY, JWKS, OTHER_KEY, RSA_KEY, assertion, hand_made
from tests.helpers.pushed_requests import assert_refused, authorize_pushed, pushed_uri

ISSUER = f"https://{HOST}"
TYPE = "oauth-authz-req+jwt"


@pytest.fixture
def keyed(world, setup):
    """A confidential application that authenticates with its keys and signs its requests with them."""
    application, _ = world.application(
        setup.domain,
        name="Keyed",
        token_endpoint_auth_method="private_key_jwt",
        jwks=JWKS,
        scopes="public mqtt.read",
    )
    return application


def request_object(cid: str, key=RSA_KEY, alg: str = "RS256", typ: str | None = TYPE, **claims) -> str:
    now = int(time.time())
    body = {
        "iss": cid,
        "aud": ISSUER,
        "client_id": cid,
        "response_type": "code",
        "redirect_uri": REDIRECT_URI,
        "scope": "mqtt.read",
        "state": "signed-state",
        "exp": now + 300,
        "nbf": now,
        "iat": now,
        "jti": secrets.token_urlsafe(8),
    }
    body.update(claims)
    header = {"alg": alg, "kid": key.kid}
    if typ is not None:
        header["typ"] = typ
    return jwt.encode(header, {k: v for k, v in body.items() if v is not None}, key, algorithms=[alg])


def authorize_with(client, client_id: str, signed: str, **query):
    return client.get(
        "/auth/oauth/authorize", query_string={"client_id": client_id, "request": signed, **query}, headers=headers()
    )


def exchange(client, app, code: str, **extra):
    body = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": assertion(app.client_id),
        **extra,
    }
    return client.post("/auth/oauth/token", data=body, headers=headers())


# By value at the authorisation endpoint ----------------------------------------------------------


@pytest.mark.parametrize(("key", "alg"), [(RSA_KEY, "RS256"), (RSA_KEY, "PS256"), (EC_KEY, "ES256")])
def test_a_signed_request_object_replaces_the_query(client, keyed, key, alg):
    signin(client)
    response = authorize_with(
        client, keyed.client_id, request_object(keyed.client_id, key, alg), scope="public", state="from-the-query"
    )
    assert response.status_code == 302, response.get_data(as_text=True)
    params = location_params(response)
    assert params["state"] == "signed-state"
    token = exchange(client, keyed, params["code"])
    assert token.status_code == 200, token.get_json()
    assert token.get_json()["scope"] == "mqtt.read"


def test_numbers_in_a_request_object_are_read_as_parameters(client, keyed):
    # OpenID Connect 6.1 shows max_age as a number.
    signin(client)
    response = authorize_with(client, keyed.client_id, request_object(keyed.client_id, max_age=3600))
    assert response.status_code == 302, response.get_data(as_text=True)


def test_the_user_signs_in_between_and_comes_back_to_the_same_request_object(client, keyed):
    verifier, challenge = pkce_pair()
    signed = request_object(keyed.client_id, code_challenge=challenge, code_challenge_method="S256")
    first = authorize_with(client, keyed.client_id, signed)
    assert first.status_code == 303
    back = sign_in_through(client, first)
    assert back.status_code == 302, back.get_data(as_text=True)
    token = exchange(client, keyed, location_params(back)["code"], code_verifier=verifier)
    assert token.status_code == 200, token.get_json()


def test_prompt_login_in_a_request_object_signs_in_once(client, keyed):
    signin(client)
    back = sign_in_through(
        client, authorize_with(client, keyed.client_id, request_object(keyed.client_id, prompt="login"))
    )
    assert back.status_code == 302, back.headers.get("Location")
    assert "code" in location_params(back)


def test_errors_inside_a_valid_request_object_go_back_by_redirect(client, keyed):
    # The object is the application's own: its redirect_uri is checked and then trusted, as a query's is.
    signin(client)
    response = authorize_with(client, keyed.client_id, request_object(keyed.client_id, scope="admin"))
    redirected_error(response, "invalid_scope", state="signed-state")


# What is refused --------------------------------------------------------------------------------


def _in(seconds: int) -> int:
    return int(time.time()) + seconds


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda cid: request_object(cid, OTHER_KEY), "signature"),  # same kid, another key
        (lambda cid: request_object(cid, aud="https://elsewhere.example"), "aud"),
        (lambda cid: request_object(cid, aud=f"{ISSUER}/auth/oauth/token"), "aud"),
        (lambda cid: request_object(cid, exp=_in(-120)), "expired"),
        (lambda cid: request_object(cid, exp=None), "exp"),
        (lambda cid: request_object(cid, exp=_in(2 * 3600)), "seconds ahead"),
        (lambda cid: request_object(cid, nbf=_in(600)), "nbf"),
        (lambda cid: request_object(cid, nbf=_in(-2 * 3600)), "nbf"),
        (lambda cid: request_object(cid, typ="JWT"), "typ"),
        (lambda cid: request_object(cid, typ=None), "typ"),
        (lambda cid: request_object(cid, iss="somebody-else"), "iss"),
        (lambda cid: request_object(cid, client_id="somebody-else"), "client_id"),
        (lambda cid: request_object(cid, request_uri="https://example.com/r"), "request_uri"),
        (lambda cid: request_object(cid, scope=["public"]), "string"),
        (
            lambda cid: hand_made({"alg": "none", "typ": TYPE}, {"iss": cid, "aud": ISSUER, "client_id": cid}, None),
            "alg none",
        ),
        (
            lambda cid: hand_made(
                {"alg": "HS256", "typ": TYPE, "kid": "rsa-1"}, {"iss": cid}, RSA_KEY.as_pem(private=False)
            ),
            "alg",
        ),
        (lambda cid: "not.a-jwt", "compact"),
        (lambda cid: "eyJ.eyJ.sig", "compact"),
    ],
)
def test_a_bad_request_object_is_refused_to_the_caller(client, keyed, make, fragment):
    signin(client)
    body = assert_refused(authorize_with(client, keyed.client_id, make(keyed.client_id)), "invalid_request_object")
    assert fragment in body["error_description"], body


def test_a_request_object_of_another_application_is_refused(client, keyed, world, setup):
    other, _ = world.application(setup.domain, token_endpoint_auth_method="private_key_jwt", jwks=JWKS, name="Other")
    signin(client)
    body = assert_refused(
        authorize_with(client, other.client_id, request_object(keyed.client_id)), "invalid_request_object"
    )
    assert "client_id" in body["error_description"] or "iss" in body["error_description"]


def test_an_application_without_keys_cannot_sign_requests(client, setup):
    signin(client)
    key = ECKey.generate_key("P-256", parameters={"kid": "mine"})
    signed = request_object(setup.public_app.client_id, key, "ES256")
    body = assert_refused(authorize_with(client, setup.public_app.client_id, signed), "invalid_request_object")
    assert "registered keys" in body["error_description"]


def test_request_and_request_uri_together_are_refused(client, keyed):
    signin(client)
    response = authorize_with(client, keyed.client_id, request_object(keyed.client_id), request_uri="urn:x")
    assert_refused(response, "invalid_request")


def test_a_request_uri_to_fetch_stays_unsupported(client, keyed):
    signin(client)
    response = authorize(client, keyed.client_id, state="s", request_uri="https://app.example.com/request.jwt")
    redirected_error(response, "request_uri_not_supported")


def test_an_application_that_must_push_cannot_send_a_request_object_by_the_browser(client, world, setup):
    app, _ = world.application(
        setup.domain,
        token_endpoint_auth_method="private_key_jwt",
        jwks=JWKS,
        require_pushed_authorization_requests=True,
    )
    signin(client)
    assert_refused(authorize_with(client, app.client_id, request_object(app.client_id)), "invalid_request")


# At PAR ---------------------------------------------------------------------------------------------


def push_object(client, app, signed: str, **extra):
    body = {
        "client_id": app.client_id,
        "request": signed,
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": assertion(app.client_id, aud=f"{ISSUER}/auth/oauth/par"),
        **extra,
    }
    return client.post("/auth/oauth/par", data=body, headers=headers())


def test_a_request_object_is_pushed_and_used(client, keyed):
    uri = pushed_uri(push_object(client, keyed, request_object(keyed.client_id, state="pushed-object")))
    signin(client)
    response = authorize_pushed(client, keyed.client_id, uri)
    assert response.status_code == 302, response.get_data(as_text=True)
    params = location_params(response)
    assert params["state"] == "pushed-object"
    assert exchange(client, keyed, params["code"]).get_json()["scope"] == "mqtt.read"


def test_a_pushed_request_object_that_expires_soon_gives_a_shorter_request_uri(client, keyed):
    response = push_object(client, keyed, request_object(keyed.client_id, exp=_in(20)))
    assert response.status_code == 201, response.get_json()
    assert 15 <= response.get_json()["expires_in"] <= 20


def test_only_the_request_objects_parameters_are_pushed(client, keyed):
    # RFC 9126 3: beside a request object, only client authentication; the form's scope is not read.
    response = push_object(client, keyed, request_object(keyed.client_id, scope="public"), scope="mqtt.read")
    uri = pushed_uri(response)
    signin(client)
    code = location_params(authorize_pushed(client, keyed.client_id, uri))["code"]
    assert exchange(client, keyed, code).get_json()["scope"] == "public"


@pytest.mark.parametrize(
    ("claims", "fragment"),
    [({"aud": "https://elsewhere.example"}, "aud"), ({"client_id": "somebody-else"}, "client_id")],
)
def test_a_bad_pushed_request_object_is_refused_as_json(client, keyed, claims, fragment):
    body = assert_refused(
        push_object(client, keyed, request_object(keyed.client_id, **claims)), "invalid_request_object"
    )
    assert fragment in body["error_description"]


def test_a_pushed_request_object_of_a_bad_signature_is_refused(client, keyed):
    body = assert_refused(
        push_object(client, keyed, request_object(keyed.client_id, OTHER_KEY)), "invalid_request_object"
    )
    assert "signature" in body["error_description"]


def test_a_jwks_uri_applications_keys_verify_its_request_objects(client, world, setup, app, key_server):
    app.config["AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS"] = True
    key = RSAKey.generate_key(2048, parameters={"kid": "served"})
    key_server.serve(key)
    remote, _ = world.application(
        setup.domain, token_endpoint_auth_method="private_key_jwt", jwks_uri=key_server.url, name="Remote"
    )
    signin(client)
    response = authorize_with(client, remote.client_id, request_object(remote.client_id, key, scope="public"))
    assert response.status_code == 302, response.get_data(as_text=True)


def test_discovery_says_request_objects_are_taken_by_value(client, setup):
    for document in ("oauth-authorization-server", "openid-configuration"):
        metadata = client.get(f"/.well-known/{document}", headers=headers()).get_json()
        assert metadata["request_parameter_supported"] is True
        assert metadata["request_uri_parameter_supported"] is False
        assert "RS256" in metadata["request_object_signing_alg_values_supported"]
        assert "none" not in metadata["request_object_signing_alg_values_supported"]
        assert not any(alg.startswith("HS") for alg in metadata["request_object_signing_alg_values_supported"])


def test_a_pushed_request_object_names_several_resources_as_an_array(client, world, setup):
    # RFC 8707 2 in a request object (RFC 9101): resource as an array; each is kept and is the token's audience.
    orders, stock = "https://orders.example.com/api", "https://stock.example.com/"
    app, _ = world.application(
        setup.domain,
        name="Keyed resources",
        token_endpoint_auth_method="private_key_jwt",
        jwks=JWKS,
        scopes="public mqtt.read",
        resources=[orders, stock],
    )
    uri = pushed_uri(push_object(client, app, request_object(app.client_id, resource=[orders, stock])))
    signin(client)
    code = location_params(authorize_pushed(client, app.client_id, uri))["code"]
    token = exchange(client, app, code)
    assert token.status_code == 200, token.get_json()
    inspected = client.get(
        "/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token.get_json()['access_token']}")
    )
    assert inspected.get_json()["aud"] == [orders, stock]
    # Any other array is refused, as before.
    body = assert_refused(
        push_object(client, app, request_object(app.client_id, scope=["public"])), "invalid_request_object"
    )
    assert "'scope' must be a string" in body["error_description"]
