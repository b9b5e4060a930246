"""Hostile input at dynamic client registration (RFC 7591 ``POST /auth/oauth/register``) and at each
registration's management URI (RFC 7592 ``GET``/``PUT``/``DELETE /auth/oauth/register/{client_id}``),
with valid tokens so that generated bodies reach the metadata checks: an answer below 500, JSON, no
stack trace.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from authsvc.core.models import Domain, RegistrationToken
from tests.helpers import HOST, REDIRECT_URI
from tests.helpers.hostile_bodies import ANY_JSON, ANY_TEXT, SWEEP_EXAMPLES

REGISTER = "/auth/oauth/register"
FIELDS = [
    "redirect_uris",
    "token_endpoint_auth_method",
    "grant_types",
    "response_types",
    "client_name",
    "scope",
    "jwks_uri",
    "jwks",
    "post_logout_redirect_uris",
    "backchannel_logout_uri",
    "id_token_signed_response_alg",
    "client_secret",
]
VALID = {
    "redirect_uris": [REDIRECT_URI],
    "token_endpoint_auth_method": "client_secret_basic",
    "grant_types": ["authorization_code"],
    "response_types": ["code"],
    "client_name": "Generated",
    "scope": "public",
    "post_logout_redirect_uris": [REDIRECT_URI],
    "backchannel_logout_uri": "https://app.example.com/logout",
    "id_token_signed_response_alg": "RS256",
}


@st.composite
def _metadata(draw: st.DrawFn) -> dict:
    body = {name: VALID.get(name, "x") for name in draw(st.sets(st.sampled_from(FIELDS)))}
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        body[name] = draw(st.one_of(ANY_TEXT, st.none(), ANY_JSON))
    return body


@pytest.fixture
def registered(hostile_client, world):
    """An initial access token good for many registrations, and one registered client."""
    [domain] = world.query(select(Domain))
    with world.app.app_context():
        token, value = RegistrationToken.issue(domain.id, expires_in=600, max_uses=10_000, created_by="test")
    world.save(token)
    headers = {"Host": HOST, "Authorization": f"Bearer {value}"}
    response = hostile_client.post(REGISTER, headers=headers, json={"redirect_uris": [REDIRECT_URI]})
    assert response.status_code == 201, response.get_json()
    return headers, response.get_json()


def _answers_cleanly(response) -> None:
    text = response.get_data()
    assert response.status_code < 500, text[:300]
    assert b"Traceback" not in text
    # 204: a deletion; 308: Flask's redirect of ".../register/" to the registration endpoint.
    if response.status_code not in (204, 308):
        assert response.is_json, text[:300]


def _sweep(send, bodies) -> None:
    @given(body=bodies)
    @settings(max_examples=SWEEP_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def answers_cleanly(body):
        _answers_cleanly(send(body))

    answers_cleanly()


def test_registration_answers_generated_metadata_without_a_500(hostile_client, registered):
    headers, _ = registered

    def send(body):
        return hostile_client.post(REGISTER, data=json.dumps(body), content_type="application/json", headers=headers)

    _sweep(send, _metadata())


def test_registration_update_answers_generated_metadata_without_a_500(hostile_client, registered):
    _, client = registered
    headers = {"Host": HOST, "Authorization": f"Bearer {client['registration_access_token']}"}
    path = f"{REGISTER}/{client['client_id']}"

    def send(body):
        # Mostly its own client_id, so that the metadata is read; sometimes a generated one.
        body.setdefault("client_id", client["client_id"])
        return hostile_client.put(path, data=json.dumps(body), content_type="application/json", headers=headers)

    _sweep(send, _metadata())


@pytest.mark.parametrize("secret", [None, True, 0, [], {}, 1.5, "", "x" * 5000])
def test_registration_update_with_a_client_secret_that_is_no_string_is_invalid_client_metadata(
    hostile_client, registered, secret
):
    _, client = registered
    headers = {"Host": HOST, "Authorization": f"Bearer {client['registration_access_token']}"}
    body = {"client_id": client["client_id"], "redirect_uris": [REDIRECT_URI], "client_secret": secret}
    response = hostile_client.put(f"{REGISTER}/{client['client_id']}", json=body, headers=headers)
    assert response.status_code == 400, response.get_data()
    assert response.get_json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_registration_management_answers_generated_tokens_and_ids_without_a_500(hostile_client, registered, method):
    _, client = registered

    # A header value is Latin-1 without line breaks, or it cannot be sent at all; the path takes anything.
    tokens = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=300) | st.just(
        client["registration_access_token"]
    )

    @given(token=tokens, client_id=ANY_TEXT | st.just(client["client_id"]))
    @settings(max_examples=SWEEP_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def answers_cleanly(token, client_id):
        headers = {"Host": HOST, "Authorization": f"Bearer {token}"}
        path = f"{REGISTER}/{quote(client_id.encode('utf-8', 'surrogatepass'), safe='')}"
        response = getattr(hostile_client, method)(path, headers=headers, json={"client_id": client_id})
        _answers_cleanly(response)

    answers_cleanly()
