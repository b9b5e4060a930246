"""Dynamic client registration's limits: invalid metadata, hostile bodies and generated ones
(registered or refused, never a 500), and the rate limit per address."""

from __future__ import annotations

import pytest
from joserfc.jwk import ECKey
from sqlalchemy import select

from authsvc.core.models import Application, RegistrationToken
from tests.helpers import REDIRECT_URI, headers
from tests.helpers.client_registration import METADATA, REGISTER, manage, register

# Invalid metadata and hostile bodies


PRIVATE_JWK = ECKey.generate_key("P-256").as_dict(private=True)


@pytest.mark.parametrize(
    "change,error",
    [
        ({"redirect_uris": ["http://app.example.com/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://app.example.com/cb#frag"]}, "invalid_redirect_uri"),
        ({"redirect_uris": "https://app.example.com/cb"}, "invalid_redirect_uri"),
        ({"redirect_uris": [7]}, "invalid_redirect_uri"),
        ({"redirect_uris": [f"https://app.example.com/{i}" for i in range(21)]}, "invalid_redirect_uri"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        ({"post_logout_redirect_uris": ["http://app.example.com/bye"]}, "invalid_client_metadata"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata"),
        ({"grant_types": ["password"]}, "invalid_client_metadata"),
        ({"grant_types": ["implicit"]}, "invalid_client_metadata"),
        ({"grant_types": ["refresh_token"]}, "invalid_client_metadata"),
        ({"grant_types": "authorization_code"}, "invalid_client_metadata"),
        ({"response_types": ["token"]}, "invalid_client_metadata"),
        ({"response_types": ["code id_token"]}, "invalid_client_metadata"),
        ({"response_types": [], "grant_types": ["authorization_code"]}, "invalid_client_metadata"),
        ({"token_endpoint_auth_method": "client_secret_jwt"}, "invalid_client_metadata"),
        ({"token_endpoint_auth_method": ["none"]}, "invalid_client_metadata"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
        ({"jwks": {"keys": []}, "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
        (
            {"jwks": {"keys": [{"kty": "nope"}]}, "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
        ),
        ({"jwks": {"keys": [PRIVATE_JWK]}, "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
        ({"jwks": "keys", "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
        (
            {
                "jwks": {"keys": [{"kty": "EC", "crv": "P-999", "x": "AAAA", "y": "AAAA"}]},
                "token_endpoint_auth_method": "private_key_jwt",
            },
            "invalid_client_metadata",
        ),
        (
            {"jwks": {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}, "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
        ),
        (
            {"jwks_uri": "http://keys.example.com/jwks", "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
        ),
        (
            {"jwks_uri": "https://127.0.0.1/jwks", "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
        ),
        (
            {
                "jwks_uri": "https://keys.example.com/jwks",
                "jwks": {"keys": [ECKey.generate_key("P-256").as_dict(private=False)]},
                "token_endpoint_auth_method": "private_key_jwt",
            },
            "invalid_client_metadata",
        ),
        ({"jwks_uri": "https://keys.example.com/jwks"}, "invalid_client_metadata"),
        ({"scope": "public unknown.scope"}, "invalid_client_metadata"),
        ({"scope": "public admin"}, "invalid_client_metadata"),
        ({"scope": "resource_token"}, "invalid_client_metadata"),
        ({"scope": ["public"]}, "invalid_client_metadata"),
        ({"client_name": 42}, "invalid_client_metadata"),
        ({"client_name": "bad\nname"}, "invalid_client_metadata"),
        ({"client_name": "x" * 201}, "invalid_client_metadata"),
        ({"backchannel_logout_uri": "https://10.0.0.1/logout"}, "invalid_client_metadata"),
        ({"backchannel_logout_uri": "ftp://app.example.com/logout"}, "invalid_client_metadata"),
        ({"id_token_signed_response_alg": "none"}, "invalid_client_metadata"),
    ],
)
def test_invalid_metadata_is_refused_and_spends_nothing(client, world, issue, change, error):
    token, value = issue()
    response = register(client, value, METADATA | change)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == error
    assert response.get_json()["error_description"]
    assert world.query(select(Application)) == []
    assert world.query(select(RegistrationToken))[0].uses == 0


@pytest.mark.parametrize(
    "kwargs,status,error",
    [
        ({"data": b"{not json", "content_type": "application/json"}, 400, "invalid_request"),
        ({"data": b"[1, 2]", "content_type": "application/json"}, 400, "invalid_request"),
        ({"data": b'{"client_name": "\\ud800"}', "content_type": "application/json"}, 400, "invalid_request"),
        ({"data": b"\xff\xfe\x00", "content_type": "application/json"}, 400, "invalid_request"),
        ({"data": b"[" * 100_00 + b"]" * 100_00, "content_type": "application/json"}, 400, "invalid_request"),
        ({"data": {"redirect_uris": REDIRECT_URI}}, 400, "invalid_request"),
        ({"data": b"{}", "content_type": "application/json"}, 400, "invalid_request"),
        ({"data": b'{"a": "' + b"x" * 70_000 + b'"}', "content_type": "application/json"}, 413, "request_too_large"),
    ],
)
def test_hostile_bodies_get_a_4xx_json_answer(client, world, issue, kwargs, status, error):
    _, value = issue()
    response = client.post(REGISTER, headers=headers(Authorization=f"Bearer {value}"), **kwargs)
    assert response.status_code == status, response.get_data(as_text=True)[:300]
    assert response.get_json()["error"] == error
    assert world.query(select(Application)) == []


# The rate limit


def test_registrations_are_rate_limited_per_address(make_app, world):
    from tests.helpers import HttpsClient

    app = make_app(AUTHSVC_TOKEN_RATE_LIMIT="2/minute")
    app.test_client_class = HttpsClient
    client = app.test_client()
    domain = world.domain()
    with world.app.app_context():
        token, value = RegistrationToken.issue(domain.id, expires_in=600, max_uses=10, created_by="test")
    world.save(token)
    answers = [register(client, value).status_code for _ in range(3)]
    assert answers == [201, 201, 429]
    assert register(client, value, environ_base={"REMOTE_ADDR": "192.0.2.9"}).status_code == 201


def test_managing_made_up_client_ids_shares_one_budget_per_address(make_app, world):
    """RFC 7592's client URI is counted per client it names, so each made-up client_id would start a new
    count: guessing registration access tokens, or loading the server, across made-up ids would go
    unlimited. Its requests also count per address, whatever client they name."""
    from tests.helpers import HttpsClient

    app = make_app(AUTHSVC_TOKEN_RATE_LIMIT="2/minute")
    app.test_client_class = HttpsClient
    client = app.test_client()
    world.domain()
    made_up = [{"client_id": f"made-up-{n}", "registration_access_token": "guess"} for n in range(3)]
    answers = [manage(client, "get", registration).status_code for registration in made_up]
    assert answers == [401, 401, 429]
    another = manage(client, "get", made_up[0], environ_base={"REMOTE_ADDR": "192.0.2.9"})
    assert another.status_code == 401


# Generated metadata


METADATA_NAMES = [
    "redirect_uris",
    "grant_types",
    "response_types",
    "token_endpoint_auth_method",
    "jwks",
    "jwks_uri",
    "scope",
    "client_name",
    "post_logout_redirect_uris",
    "backchannel_logout_uri",
    "id_token_signed_response_alg",
    "software_statement",
]


def test_generated_metadata_of_any_shape_is_registered_or_refused_never_a_500(client, issue):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    _, value = issue(max_uses=1000)
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
        max_leaves=10,
    )
    plausible = st.sampled_from(
        [REDIRECT_URI, "none", "private_key_jwt", "code", "authorization_code", "public", "RS256", ["code"]]
    )
    bodies = st.dictionaries(st.sampled_from(METADATA_NAMES), json_values | plausible, max_size=6)

    @given(body=bodies)
    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def answers(body):
        response = register(client, value, body)
        assert response.status_code in (201, 400), (body, response.get_data(as_text=True))
        assert response.get_json()["error" if response.status_code == 400 else "client_id"]

    answers()


def test_generated_jwks_are_registered_or_refused_never_a_500(client, issue):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    _, value = issue(max_uses=1000)
    fields = st.text(max_size=12) | st.integers() | st.none() | st.lists(st.text(max_size=5), max_size=2)
    key = st.fixed_dictionaries(
        {"kty": st.sampled_from(["RSA", "EC", "OKP", "oct", "", 1])},
        optional={
            name: st.sampled_from(["P-256", "P-999", "Ed25519", "AQAB", "AAAA", "sig"]) | fields
            for name in ("crv", "x", "y", "n", "e", "d", "use", "alg", "kid")
        },
    )
    jwks = st.fixed_dictionaries({"keys": st.lists(key, max_size=3)}) | fields

    @given(jwks=jwks)
    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def answers(jwks):
        response = register(client, value, METADATA | {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks})
        assert response.status_code in (201, 400), (jwks, response.get_data(as_text=True))

    answers()
