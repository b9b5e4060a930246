"""Dynamic client registration (RFC 7591) and its management (RFC 7592), through the app.

The real client against gunicorn is tests/test_registration_e2e.py.
"""

from __future__ import annotations

import base64
import time

import pytest
from joserfc.jwk import ECKey
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import Application, AuditRecord, RegistrationToken
from tests.conftest import HOST, OTHER_HOST, PASSWORD, REDIRECT_URI, get_code, headers, pkce_pair

REGISTER = "/auth/oauth/register"
INSPECT = "/api/engine/v2/api_keys/inspect"
METADATA = {"redirect_uris": [REDIRECT_URI], "client_name": "Partner app", "scope": "public mqtt.read"}


@pytest.fixture
def domain(world):
    return world.domain()


@pytest.fixture
def issue(world, domain):
    """Issue an initial access token of ``domain`` (or another); returns (row, value)."""

    def issue(on=None, *, expires_in=600, max_uses=1):
        with world.app.app_context():
            token, value = RegistrationToken.issue(
                (on or domain).id, expires_in=expires_in, max_uses=max_uses, created_by="test"
            )
        return world.save(token), value

    return issue


def register(client, token, metadata=None, host=HOST, **kwargs):
    kwargs.setdefault("json", METADATA if metadata is None else metadata)
    return client.post(REGISTER, headers=headers(host, Authorization=f"Bearer {token}"), **kwargs)


def manage(client, method, registered, token=None, **kwargs):
    token = token or registered["registration_access_token"]
    path = f"{REGISTER}/{registered['client_id']}"
    return getattr(client, method)(path, headers=headers(Authorization=f"Bearer {token}"), **kwargs)


@pytest.fixture
def registered(client, issue):
    """A confidential client, registered: the 201 answer's body."""
    _, value = issue()
    response = register(client, value)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def stored(world, client_id) -> Application | None:
    rows = world.query(select(Application).where(Application.client_id == client_id))
    return rows[0] if rows else None


# Registering


def test_a_registration_answers_201_with_the_client_and_its_management_credentials(client, world, issue):
    token, value = issue()
    response = register(client, value)
    assert response.status_code == 201
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_json()
    assert body["client_name"] == "Partner app"
    assert body["redirect_uris"] == [REDIRECT_URI]
    assert body["grant_types"] == ["authorization_code"]
    assert body["response_types"] == ["code"]
    assert body["token_endpoint_auth_method"] == "client_secret_basic"
    assert body["scope"] == "public mqtt.read"
    assert body["client_secret_expires_at"] == 0
    assert abs(body["client_id_issued_at"] - time.time()) < 60
    assert body["registration_client_uri"] == f"https://{HOST}{REGISTER}/{body['client_id']}"
    # Only digests are kept.
    application = stored(world, body["client_id"])
    assert application.client_secret_digest == security.digest(body["client_secret"])
    assert application.registration_access_token_digest == security.digest(body["registration_access_token"])
    assert application.registration_token_id == token.id
    assert application.consent is True  # people are asked before a registered client gets a code
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "application.registered"))
    assert record.actor == f"registration_token:{token.id}"
    assert record.target == f"application:{application.id}"
    assert body["client_secret"] not in str(record.details)


def test_a_public_client_gets_no_secret_and_must_use_pkce(client, world, issue):
    _, value = issue()
    body = register(client, value, METADATA | {"token_endpoint_auth_method": "none"}).get_json()
    assert "client_secret" not in body and "client_secret_expires_at" not in body
    application = stored(world, body["client_id"])
    assert application.client_secret_digest is None
    assert application.require_pkce is True


def test_unknown_and_unsupported_metadata_is_ignored(client, issue):
    _, value = issue()
    metadata = METADATA | {"logo_uri": "https://app.example.com/logo.png", "contacts": ["a@b.c"], "x-custom": {"a": 1}}
    body = register(client, value, metadata).get_json()
    assert not {"logo_uri", "contacts", "x-custom"} & set(body)


def test_the_registered_grant_types_are_the_only_ones_the_client_may_use(client, world, issue):
    _, value = issue()
    body = register(client, value).get_json()
    world.user(world.query(select(Application))[0].domain, "robot@example.com", service_account=True)
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "password", "username": "robot@example.com", "password": PASSWORD},
        auth=(body["client_id"], body["client_secret"]),
        headers=headers(),
    )
    assert response.status_code == 400
    assert response.get_json()["error"] == "unauthorized_client"


def test_a_code_flow_gives_a_refresh_token_only_with_the_refresh_grant(client, world, issue, setup_person):
    results = {}
    for grants in (["authorization_code"], ["authorization_code", "refresh_token"]):
        _, value = issue()
        body = register(client, value, METADATA | {"grant_types": grants, "token_endpoint_auth_method": "none"})
        body = body.get_json()
        world.update(Application, stored(world, body["client_id"]).id, consent=False)
        verifier, challenge = pkce_pair()
        code = get_code(client, body["client_id"], code_challenge=challenge, code_challenge_method="S256")
        token = client.post(
            "/auth/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "client_id": body["client_id"],
                "redirect_uri": REDIRECT_URI,
                "code_verifier": verifier,
            },
            headers=headers(),
        ).get_json()
        results[len(grants)] = token
    assert "access_token" in results[1] and "refresh_token" not in results[1]
    assert "refresh_token" in results[2]


@pytest.fixture
def setup_person(world, client, domain):
    from tests.conftest import signin

    world.user(domain, "person@example.com", name="Person")
    signin(client)


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_a_registered_client_authenticates_only_with_the_method_it_registered(client, issue, method):
    _, value = issue()
    answer = register(client, value, METADATA | {"token_endpoint_auth_method": method}).get_json()
    basic = base64.b64encode(f"{answer['client_id']}:{answer['client_secret']}".encode()).decode()
    as_basic = {"headers": headers(Authorization=f"Basic {basic}"), "data": {"token": "unknown"}}
    as_post = {
        "headers": headers(),
        "data": {"token": "unknown", "client_id": answer["client_id"], "client_secret": answer["client_secret"]},
    }
    used, other = (as_basic, as_post) if method == "client_secret_basic" else (as_post, as_basic)
    # RFC 7009 answers 200 to an authenticated client even for an unknown token.
    assert client.post("/auth/oauth/revoke", **used).status_code == 200
    refused = client.post("/auth/oauth/revoke", **other)
    assert refused.status_code == 401 and refused.get_json()["error"] == "invalid_client"


def test_a_device_client_needs_no_redirect_uri(client, world, issue):
    _, value = issue()
    metadata = {"grant_types": ["urn:ietf:params:oauth:grant-type:device_code"], "token_endpoint_auth_method": "none"}
    body = register(client, value, metadata).get_json()
    assert body["response_types"] == [] and body["redirect_uris"] == []
    assert stored(world, body["client_id"]).device is True
    response = client.post("/auth/oauth/device_authorization", data={"client_id": body["client_id"]}, headers=headers())
    assert response.status_code == 200, response.get_json()


def test_private_key_jwt_stores_the_public_keys_and_issues_no_secret(client, world, issue):
    _, value = issue()
    key = ECKey.generate_key("P-256")
    jwks = {"keys": [key.as_dict(private=False)]}
    body = register(client, value, METADATA | {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks})
    body = body.get_json()
    assert body["token_endpoint_auth_method"] == "private_key_jwt"
    assert "client_secret" not in body
    assert body["jwks"]["keys"][0]["x"] == jwks["keys"][0]["x"]
    application = stored(world, body["client_id"])
    assert application.jwks == body["jwks"] and application.token_endpoint_auth_method == "private_key_jwt"
    # Without a secret it is still no public client: naming itself is not authenticating.
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": "x", "client_id": body["client_id"]},
        headers=headers(),
    )
    assert response.get_json()["error"] == "invalid_client"


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


# The initial access token


@pytest.mark.parametrize("authorization", [None, "Bearer", "Basic Zm9vOmJhcg==", "Bearer nope", "Bearer " + "x" * 500])
def test_without_a_valid_initial_access_token_registration_is_401(client, world, issue, authorization):
    issue()
    extra = {"Authorization": authorization} if authorization else {}
    response = client.post(REGISTER, json=METADATA, headers=headers(**extra))
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"
    assert response.headers["WWW-Authenticate"].startswith('Bearer realm="authsvc"')
    assert world.query(select(Application)) == []


def test_a_single_use_token_registers_once(client, issue):
    _, value = issue()
    assert register(client, value).status_code == 201
    second = register(client, value)
    assert second.status_code == 401 and second.get_json()["error"] == "invalid_token"


def test_a_limited_token_registers_its_number_of_times(client, world, issue):
    token, value = issue(max_uses=3)
    assert [register(client, value).status_code for _ in range(4)] == [201, 201, 201, 401]
    assert world.query(select(RegistrationToken))[0].uses == 3


def test_an_expired_or_revoked_token_is_refused(client, world, issue):
    expired, expired_value = issue()
    world.update(RegistrationToken, expired.id, expires_at=int(time.time()) - 1)
    revoked, revoked_value = issue()
    world.update(RegistrationToken, revoked.id, revoked_at=int(time.time()))
    assert register(client, expired_value).status_code == 401
    assert register(client, revoked_value).status_code == 401


def test_a_token_of_another_domain_is_refused(client, world, issue):
    other = world.domain(OTHER_HOST)
    _, value = issue(other)
    assert register(client, value).status_code == 401
    assert register(client, value, host=OTHER_HOST).status_code == 201


# RFC 7592: read, update, delete


def test_reading_a_registration_answers_its_metadata_without_the_secret(client, registered):
    response = manage(client, "get", registered)
    assert response.status_code == 200
    body = response.get_json()
    assert response.headers["Cache-Control"] == "no-store"
    assert "client_secret" not in body
    for name in ("client_id", "client_name", "redirect_uris", "scope", "grant_types", "registration_client_uri"):
        assert body[name] == registered[name]
    assert body["registration_access_token"] == registered["registration_access_token"]


def test_an_update_replaces_the_whole_registration(client, world, registered):
    update = {
        "client_id": registered["client_id"],
        "redirect_uris": ["https://app.example.com/other"],
        "scope": "mqtt.read",
        "grant_types": ["authorization_code", "refresh_token"],
    }
    response = manage(client, "put", registered, json=update)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["redirect_uris"] == ["https://app.example.com/other"]
    assert body["scope"] == "mqtt.read"
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    # Left out, so back to the defaults: the name is the client id, the method client_secret_basic.
    assert body["client_name"] == registered["client_id"]
    application = stored(world, registered["client_id"])
    assert application.redirect_uris == ["https://app.example.com/other"]
    # The same secret still authenticates: it was not sent, and not changed.
    assert application.client_secret_digest == security.digest(registered["client_secret"])
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "application.updated"))
    assert record.actor == f"client:{registered['client_id']}"


def test_an_update_to_a_public_client_drops_the_secret_and_back_issues_a_new_one(client, world, registered):
    base = {"client_id": registered["client_id"], "redirect_uris": [REDIRECT_URI]}
    public = manage(client, "put", registered, json=base | {"token_endpoint_auth_method": "none"}).get_json()
    assert "client_secret" not in public
    assert stored(world, registered["client_id"]).client_secret_digest is None
    assert stored(world, registered["client_id"]).require_pkce is True, "a public client needs PKCE"
    again = manage(client, "put", registered, json=base | {"token_endpoint_auth_method": "client_secret_post"})
    secret = again.get_json()["client_secret"]
    assert secret != registered["client_secret"]
    assert stored(world, registered["client_id"]).client_secret_digest == security.digest(secret)


@pytest.mark.parametrize(
    "update,error",
    [
        ({"redirect_uris": [REDIRECT_URI]}, "invalid_request"),  # RFC 7592 2.2: client_id is required
        ({"client_id": "someone-else", "redirect_uris": [REDIRECT_URI]}, "invalid_request"),
        ({"client_id": "OWN", "client_secret": "wrong", "redirect_uris": [REDIRECT_URI]}, "invalid_request"),
        ({"client_id": "OWN", "registration_access_token": "x", "redirect_uris": [REDIRECT_URI]}, "invalid_request"),
        ({"client_id": "OWN", "client_id_issued_at": 1, "redirect_uris": [REDIRECT_URI]}, "invalid_request"),
        ({"client_id": "OWN", "redirect_uris": ["http://evil.example.com/"]}, "invalid_redirect_uri"),
        ({"client_id": "OWN", "redirect_uris": [REDIRECT_URI], "scope": "admin"}, "invalid_client_metadata"),
    ],
)
def test_an_invalid_update_is_refused_and_changes_nothing(client, world, registered, update, error):
    if update.get("client_id") == "OWN":
        update = update | {"client_id": registered["client_id"]}
    response = manage(client, "put", registered, json=update | {"client_name": "Changed"})
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == error
    application = stored(world, registered["client_id"])
    assert application.redirect_uris == [REDIRECT_URI] and application.name == "Partner app"


def test_deleting_a_registration_removes_the_client_and_revokes_its_tokens(client, world, issue, setup_person):
    _, value = issue()
    body = register(client, value, METADATA | {"token_endpoint_auth_method": "none"}).get_json()
    world.update(Application, stored(world, body["client_id"]).id, consent=False)
    verifier, challenge = pkce_pair()
    code = get_code(client, body["client_id"], code_challenge=challenge, code_challenge_method="S256")
    token = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": body["client_id"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        },
        headers=headers(),
    ).get_json()["access_token"]
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 200
    response = manage(client, "delete", body)
    assert response.status_code == 204 and response.data == b""
    assert stored(world, body["client_id"]) is None
    assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 401
    assert manage(client, "get", body).status_code == 401
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "application.deleted"))
    assert record.details["before"]["revoked_tokens"] == 1


def test_a_wrong_or_another_clients_token_is_401_for_every_method(client, world, issue):
    _, value = issue(max_uses=2)
    first = register(client, value).get_json()
    second = register(client, value).get_json()
    for method in ("get", "put", "delete"):
        for token in ("wrong", second["registration_access_token"], first["client_secret"]):
            response = manage(client, method, first, token=token, json={"client_id": first["client_id"]})
            assert response.status_code == 401, (method, response.get_json())
            assert response.get_json()["error"] == "invalid_token"
            assert "WWW-Authenticate" in response.headers
    assert stored(world, first["client_id"]) is not None


def test_an_application_an_admin_created_cannot_be_managed_by_registration(client, world, domain):
    application, _ = world.application(domain)
    response = client.get(f"{REGISTER}/{application.client_id}", headers=headers(Authorization="Bearer anything"))
    assert response.status_code == 401


# Discovery and rate limits


def test_the_metadata_documents_name_the_registration_endpoint(client, domain):
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        document = client.get(path, headers=headers()).get_json()
        assert document["registration_endpoint"] == f"https://{HOST}{REGISTER}"


def test_registrations_are_rate_limited_per_address(make_app, world):
    from tests.conftest import HttpsClient

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


def test_real_registration_answers_conform_to_the_openapi_document(client, issue):
    from jsonschema import Draft202012Validator

    document = client.get("/api/engine/v2/openapi.json", headers=headers()).get_json()

    def conforms(body, name):
        schema = {**document["components"]["schemas"][name], "components": document["components"]}
        Draft202012Validator(schema).validate(body)

    _, value = issue()
    registered = register(client, value).get_json()
    conforms(registered, "ClientInformation")
    conforms(manage(client, "get", registered).get_json(), "ClientInformation")
    update = {
        "client_id": registered["client_id"],
        "redirect_uris": [REDIRECT_URI],
        "token_endpoint_auth_method": "none",
    }
    conforms(manage(client, "put", registered, json=update).get_json(), "ClientInformation")
    for failure in (register(client, value), manage(client, "get", registered, token="wrong")):
        conforms(failure.get_json(), "Error")


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
