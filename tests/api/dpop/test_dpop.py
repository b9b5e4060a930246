"""DPoP at the token endpoint (RFC 9449 4, 5, 8, 10): proofs, bound tokens, nonces, bound codes and refresh tokens."""

from __future__ import annotations

import base64
import json
import time

import pytest
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import Token
from tests.helpers import (
    OTHER_HOST,
    PASSWORD,
    REDIRECT_URI,
    HttpsClient,
    authorize,
    get_code,
    headers,
    location_params,
    signin,
)
from tests.helpers.client_credentials import basic, bound_app
from tests.helpers.dpop import TOKEN_URL, Holder

pytestmark = pytest.mark.usefixtures("setup")


def token_request(client, holder: Holder | None, proof: str | None = None, **data):
    extra = {}
    if holder is not None or proof is not None:
        extra["DPoP"] = proof if proof is not None else holder.proof()
    response = client.post("/auth/oauth/token", data=data, headers=headers(**extra))
    if holder is not None:
        holder.remember(response)
    return response


def with_nonce(client, holder: Holder, **data):
    """A token request as a DPoP client makes it: the first answer gives the nonce, the retry carries it."""
    first = token_request(client, holder, **data)
    if first.status_code == 400 and first.get_json()["error"] == "use_dpop_nonce":
        return token_request(client, holder, **data)
    return first


def code_exchange(client, setup, holder: Holder | None, **authorize):
    signin(client)
    code = get_code(client, setup.public_app.client_id, **authorize)
    params = {"grant_type": "authorization_code", "code": code, "client_id": setup.public_app.client_id}
    params["redirect_uri"] = REDIRECT_URI
    if holder is None:
        return token_request(client, None, **params)
    return with_nonce(client, holder, **params)


def stored(world, access_token: str) -> Token:
    (row,) = world.query(select(Token).where(Token.access_token_digest == security.digest(access_token)))
    return row


@pytest.mark.parametrize("alg", ["ES256", "RS256", "PS256", "EdDSA", "Ed25519"])
def test_a_code_exchange_with_a_proof_issues_a_dpop_token_bound_to_the_key(client, setup, world, alg):
    holder = Holder(alg)
    response = code_exchange(client, setup, holder)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["token_type"] == "DPoP"
    assert response.headers["DPoP-Nonce"] == holder.nonce
    assert stored(world, body["access_token"]).dpop_jkt == holder.jkt


def test_an_rsa_4096_proof_with_its_long_jwk_header_is_accepted(client, setup, world):
    holder = Holder("RS256", bits=4096)
    assert len(holder.proof().split(".")[0]) > 1000  # joserfc's default limit is 512 bytes
    response = code_exchange(client, setup, holder)
    assert response.status_code == 200, response.get_json()
    assert stored(world, response.get_json()["access_token"]).dpop_jkt == holder.jkt


def test_without_a_proof_the_token_stays_bearer(client, setup, world):
    response = code_exchange(client, setup, None)
    assert response.get_json()["token_type"] == "bearer"
    assert "DPoP-Nonce" not in response.headers
    assert stored(world, response.get_json()["access_token"]).dpop_jkt is None


def test_a_proof_without_the_nonce_gets_use_dpop_nonce_and_the_retry_succeeds(client, setup):
    signin(client)
    holder = Holder()
    code = get_code(client, setup.public_app.client_id)
    params = {"grant_type": "authorization_code", "code": code, "client_id": setup.public_app.client_id}
    params["redirect_uri"] = REDIRECT_URI
    first = token_request(client, holder, **params)
    assert first.status_code == 400
    assert first.get_json()["error"] == "use_dpop_nonce"
    assert first.headers["DPoP-Nonce"]
    # The nonce answer spent nothing: the same code is exchanged on the retry.
    retry = token_request(client, holder, **params)
    assert retry.status_code == 200, retry.get_json()
    assert retry.get_json()["token_type"] == "DPoP"


def test_a_wrong_nonce_gets_a_fresh_one(client, setup):
    holder = Holder()
    holder.nonce = "not-the-servers"
    response = token_request(client, holder, grant_type="client_credentials")
    assert response.get_json()["error"] == "use_dpop_nonce"
    assert response.headers["DPoP-Nonce"] != "not-the-servers"


def second_client(make_app, **config):
    """A client of another instance of the service, with its own settings, on the same database and Redis."""
    other = make_app(**config)
    other.test_client_class = HttpsClient
    return other.test_client()


def test_nonces_are_not_required_when_turned_off(make_app, setup):
    client = second_client(make_app, AUTHSVC_DPOP_NONCE=False)
    holder = Holder()
    response = token_request(
        client,
        holder,
        grant_type="password",
        username="service@example.com",
        password=PASSWORD,
        client_id=setup.public_app.client_id,
    )
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["token_type"] == "DPoP"
    assert "DPoP-Nonce" not in response.headers


def test_nonces_rotate_and_the_previous_one_stays_accepted_for_a_window(make_app, clock):
    client = second_client(make_app, AUTHSVC_DPOP_NONCE_LIFETIME=1)
    # A worker's first proof loads joserfc (authsvc.api.proofs): before the clock is aligned, so that
    # each step below stays within its one-second window on a loaded machine too.
    token_request(client, Holder(), grant_type="x")
    holder = Holder()
    clock.advance(1.02 - clock.time() % 1)  # at the start of a window: each step below crosses one boundary
    old = token_request(client, holder, grant_type="x").headers["DPoP-Nonce"]
    clock.advance(1)
    # One window later the old nonce is the previous one: still accepted (the grant type is what is
    # refused), and the answer carries the new one.
    later = token_request(client, holder, grant_type="x")
    assert later.get_json()["error"] == "unsupported_grant_type"
    assert later.headers["DPoP-Nonce"] != old
    holder.nonce = old
    clock.advance(1)
    stale = token_request(client, holder, grant_type="x")
    assert stale.get_json()["error"] == "use_dpop_nonce"
    assert stale.headers["DPoP-Nonce"] not in (old, None)


@pytest.mark.postgresql
def test_nonces_are_shared_between_instances_through_redis(client, make_app):
    other = second_client(make_app)
    holder = Holder()
    token_request(client, holder, grant_type="x")  # this instance gives the nonce
    answered = token_request(other, holder, grant_type="x")  # the other accepts it
    assert answered.get_json()["error"] == "unsupported_grant_type"


def test_nonces_are_per_domain(client, setup, world):
    """A nonce is the server's word to one issuer (RFC 9449 8): another domain's is no nonce here."""
    world.domain(OTHER_HOST)
    holder = Holder()
    token_request(client, holder, grant_type="x")  # this domain's nonce
    assert holder.nonce
    proof = holder.proof(f"https://{OTHER_HOST}/auth/oauth/token")
    refused = client.post("/auth/oauth/token", data={"grant_type": "x"}, headers=headers(OTHER_HOST, DPoP=proof))
    assert refused.get_json()["error"] == "use_dpop_nonce", refused.get_json()
    assert refused.headers["DPoP-Nonce"] != holder.nonce


@pytest.mark.parametrize(
    ("change", "description"),
    [
        ({"claims": {"htu": "https://auth.example.com/auth/oauth/revoke"}}, "htu"),
        ({"claims": {"htu": "https://elsewhere.example.com/auth/oauth/token"}}, "htu"),
        ({"claims": {"htm": "GET"}}, "htm"),
        ({"claims": {"iat": int(time.time()) - 3600}}, "iat"),
        ({"claims": {"iat": int(time.time()) + 3600}}, "iat"),
        ({"drop": ("jti",)}, "jti"),
        ({"drop": ("iat",)}, "iat"),
        ({"header": {"typ": "JWT"}}, "typ"),
        ({"header": {"jwk": None}}, "jwk"),
    ],
)
def test_a_proof_that_fails_a_check_is_invalid_dpop_proof(client, change, description):
    holder = Holder()
    token_request(client, holder, grant_type="client_credentials")  # the nonce
    response = token_request(client, holder, proof=holder.proof(**change), grant_type="client_credentials")
    assert response.status_code == 400
    body = response.get_json()
    assert body["error"] == "invalid_dpop_proof", body
    assert description in body["error_description"]


def test_htu_is_compared_without_query_and_fragment(client):
    holder = Holder()
    token_request(client, holder, grant_type="x")
    accepted = token_request(client, holder, proof=holder.proof(TOKEN_URL + "?a=1#f"), grant_type="x")
    assert accepted.get_json()["error"] == "unsupported_grant_type"


def test_a_replayed_proof_is_refused(client, setup):
    holder = Holder()
    token_request(client, holder, grant_type="x")
    proof = holder.proof()
    assert token_request(client, holder, proof=proof, grant_type="x").get_json()["error"] == "unsupported_grant_type"
    replayed = token_request(client, holder, proof=proof, grant_type="x").get_json()
    assert replayed["error"] == "invalid_dpop_proof"
    assert "jti" in replayed["error_description"]


def test_a_private_key_in_the_jwk_is_refused(client):
    holder = Holder()
    token_request(client, holder, grant_type="x")
    private = holder.key.as_dict(private=True)
    response = token_request(client, holder, proof=holder.proof(header={"jwk": private}), grant_type="x")
    assert response.get_json()["error"] == "invalid_dpop_proof"
    assert "private" in response.get_json()["error_description"]


@pytest.mark.parametrize("alg", ["none", "HS256", "RS512"])
def test_symmetric_none_and_other_algorithms_are_refused(client, alg):
    holder = Holder()
    token_request(client, holder, grant_type="x")
    # Signed ES256 whatever the header says: the alg is refused before any key is used.
    header_only = holder.proof().split(".")
    header = {"typ": "dpop+jwt", "alg": alg, "jwk": holder.jwk}
    header_only[0] = base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=").decode()
    response = token_request(client, holder, proof=".".join(header_only), grant_type="x")
    assert response.get_json()["error"] == "invalid_dpop_proof"
    assert "alg" in response.get_json()["error_description"]


def test_a_signature_by_another_key_is_refused(client):
    holder, other = Holder(), Holder()
    token_request(client, holder, grant_type="x")
    forged = other.proof(header={"jwk": holder.jwk}, nonce=holder.nonce)
    response = token_request(client, holder, proof=forged, grant_type="x")
    assert response.get_json()["error"] == "invalid_dpop_proof"


@pytest.mark.parametrize("proof", ["", "a.b", "not a jwt at all", "e30.e30.e30", "x" * 9000, "é.é.é"])
def test_garbage_proofs_are_400_not_500(client, proof):
    response = client.post("/auth/oauth/token", data={"grant_type": "x"}, headers=headers(DPoP=proof))
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_dpop_proof"


def test_two_dpop_headers_are_refused(client):
    holder = Holder()
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "x"},
        headers=[("Host", "auth.example.com"), ("DPoP", holder.proof()), ("DPoP", holder.proof())],
    )
    assert response.get_json()["error"] == "invalid_dpop_proof"


def test_dpop_jkt_binds_the_code_to_that_key(client, setup):
    holder = Holder()
    response = code_exchange(client, setup, holder, dpop_jkt=holder.jkt)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["token_type"] == "DPoP"


def test_a_code_bound_by_dpop_jkt_is_refused_for_another_key_or_without_a_proof(client, setup):
    holder, other = Holder(), Holder()
    refused = code_exchange(client, setup, other, dpop_jkt=holder.jkt)
    assert refused.status_code == 400
    assert refused.get_json()["error"] == "invalid_grant"
    assert "dpop_jkt" in refused.get_json()["error_description"]
    without = code_exchange(client, setup, None, dpop_jkt=holder.jkt)
    assert without.get_json()["error"] == "invalid_grant"


@pytest.mark.parametrize("value", ["short", "x" * 44, "a" * 42 + "!"])
def test_a_malformed_dpop_jkt_is_refused_at_authorisation(client, setup, value):
    signin(client)
    response = authorize(client, setup.public_app.client_id, dpop_jkt=value)
    assert response.status_code == 302
    params = location_params(response)
    assert params["error"] == "invalid_request"
    assert "dpop_jkt" in params["error_description"]


def refresh(client, holder, refresh_token, client_id):
    params = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    return with_nonce(client, holder, **params) if holder else token_request(client, None, **params)


def test_a_public_clients_refresh_token_is_bound_to_the_key(client, setup, world):
    holder = Holder()
    first = code_exchange(client, setup, holder).get_json()
    refreshed = refresh(client, holder, first["refresh_token"], setup.public_app.client_id)
    assert refreshed.status_code == 200, refreshed.get_json()
    assert refreshed.get_json()["token_type"] == "DPoP"
    assert stored(world, refreshed.get_json()["access_token"]).dpop_jkt == holder.jkt


def test_a_public_clients_refresh_with_another_key_or_none_is_invalid_grant_and_spends_nothing(client, setup):
    holder, thief = Holder(), Holder()
    first = code_exchange(client, setup, holder).get_json()
    stolen = refresh(client, thief, first["refresh_token"], setup.public_app.client_id)
    assert stolen.status_code == 400
    assert stolen.get_json()["error"] == "invalid_grant"
    assert "DPoP key" in stolen.get_json()["error_description"]
    bare = refresh(client, None, first["refresh_token"], setup.public_app.client_id)
    assert bare.get_json()["error"] == "invalid_grant"
    # The holder's own refresh still works: the refused attempts did not spend the token.
    assert refresh(client, holder, first["refresh_token"], setup.public_app.client_id).status_code == 200


def test_a_confidential_clients_refresh_may_move_to_another_key(client, setup, world):
    holder, other = Holder(), Holder()
    signin(client)
    code = get_code(client, setup.confidential_app.client_id)
    auth = (setup.confidential_app.client_id, setup.client_secret)
    params = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    token_request(client, holder, grant_type="x")
    first = client.post("/auth/oauth/token", data=params, headers=headers(DPoP=holder.proof()), auth=auth)
    assert first.get_json()["token_type"] == "DPoP", first.get_json()
    other.nonce = holder.nonce
    params = {"grant_type": "refresh_token", "refresh_token": first.get_json()["refresh_token"]}
    moved = client.post("/auth/oauth/token", data=params, headers=headers(DPoP=other.proof()), auth=auth)
    assert moved.status_code == 200, moved.get_json()
    assert stored(world, moved.get_json()["access_token"]).dpop_jkt == other.jkt


def test_an_application_that_requires_dpop_refuses_token_requests_without_a_proof(client, setup, world):
    world.update(type(setup.public_app), setup.public_app.id, dpop_bound_access_tokens=True)
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    params = {"grant_type": "authorization_code", "code": code, "client_id": setup.public_app.client_id}
    params["redirect_uri"] = REDIRECT_URI
    refused = token_request(client, None, **params)
    assert refused.status_code == 400
    assert refused.get_json()["error"] == "invalid_request"
    assert "requires DPoP" in refused.get_json()["error_description"]
    # Refused before the code was claimed: with a proof, the same code is exchanged.
    accepted = with_nonce(client, Holder(), **params)
    assert accepted.status_code == 200, accepted.get_json()
    assert accepted.get_json()["token_type"] == "DPoP"


def test_every_grant_takes_a_proof(client, setup, world):
    holder = Holder()
    password = with_nonce(
        client,
        holder,
        grant_type="password",
        username="service@example.com",
        password=PASSWORD,
        client_id=setup.public_app.client_id,
    )
    assert password.get_json()["token_type"] == "DPoP", password.get_json()
    application, secret = bound_app(world, setup)
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials"},
        headers=headers(Authorization=basic(application.client_id, secret), DPoP=holder.proof()),
    )
    assert response.get_json()["token_type"] == "DPoP", response.get_json()
    assert "refresh_token" not in response.get_json()
