"""Dynamic client registration (RFC 7591) through the app: registering, and the initial access token.

Managing a registration (RFC 7592) is tests/api/registration/test_registration_management.py; invalid and hostile
metadata and the rate limit are tests/api/registration/test_registration_limits.py. The real client against
gunicorn is tests/e2e/test_registration_e2e.py.
"""

from __future__ import annotations

import base64
import time

import pytest
from joserfc.jwk import ECKey
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import Application, AuditRecord, RegistrationToken
from tests.helpers import HOST, OTHER_HOST, PASSWORD, REDIRECT_URI, get_code, headers, pkce_pair
from tests.helpers.client_registration import METADATA, REGISTER, manage, register, stored

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
    # logo_uri is kept, as the client's own claim (tests/api/admin/test_consent_texts.py).
    _, value = issue()
    metadata = METADATA | {"logo_uri": "https://app.example.com/logo.png", "contacts": ["a@b.c"], "x-custom": {"a": 1}}
    body = register(client, value, metadata).get_json()
    assert not {"contacts", "x-custom"} & set(body)
    assert body["logo_uri"] == "https://app.example.com/logo.png"


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


# Discovery and the answers' shape


def test_the_metadata_documents_name_the_registration_endpoint(client, domain):
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        document = client.get(path, headers=headers()).get_json()
        assert document["registration_endpoint"] == f"https://{HOST}{REGISTER}"


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
