"""DPoP-bound tokens where tokens are presented (RFC 9449 7): UserInfo, inspect, introspection, everywhere else.

A bound token counts only as ``Authorization: DPoP <token>`` with a proof by
its key for that very request (method, URL, ``ath``); as Bearer, in a query
string or a cookie it is refused. Introspection says what it is.
"""

from __future__ import annotations

import pytest

from tests.helpers import REDIRECT_URI, get_code, headers, signin
from tests.helpers.dpop import INSPECT_URL, USERINFO_URL, Holder
from tests.helpers.inspect_fast_path import through_fast_path

INSPECT = "/api/engine/v2/api_keys/inspect"
USERINFO = "/auth/oauth/userinfo"


@pytest.fixture
def bound(client, oidc):
    """A DPoP-bound access token (openid profile email) of the oidc fixture's confidential application, and its key."""
    holder = Holder()
    signin(client)
    code = get_code(client, oidc.app.client_id, scope="openid profile email")
    params = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    auth = (oidc.app.client_id, oidc.secret)
    for _ in range(2):  # the first answer gives the nonce
        response = holder.remember(
            client.post("/auth/oauth/token", data=params, headers=headers(DPoP=holder.proof()), auth=auth)
        )
        if response.status_code == 200:
            break
    assert response.get_json()["token_type"] == "DPoP", response.get_json()
    holder.access_token = response.get_json()["access_token"]
    holder.refresh_token = response.get_json()["refresh_token"]
    return holder


def dpop_get(client, path, holder, proof=None, **extra):
    proof = proof or holder.proof(f"https://auth.example.com{path}", "GET", access_token=holder.access_token)
    return client.get(path, headers=headers(Authorization=f"DPoP {holder.access_token}", DPoP=proof, **extra))


def test_inspect_takes_a_bound_token_with_a_proof_and_states_its_key(client, bound):
    response = dpop_get(client, INSPECT, bound)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["cnf"] == {"jkt": bound.jkt}


def test_a_bearer_tokens_inspect_answer_has_no_cnf(client, setup):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    params = {"grant_type": "authorization_code", "code": code, "client_id": setup.public_app.client_id}
    token = client.post("/auth/oauth/token", data={**params, "redirect_uri": REDIRECT_URI}, headers=headers())
    answer = client.get(INSPECT, headers=headers(Authorization=f"Bearer {token.get_json()['access_token']}"))
    assert answer.status_code == 200
    assert "cnf" not in answer.get_json()


@pytest.mark.parametrize("path", [INSPECT, USERINFO])
def test_a_bound_token_presented_as_bearer_is_refused(client, bound, path):
    response = client.get(path, headers=headers(Authorization=f"Bearer {bound.access_token}"))
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"
    assert "DPoP" in response.get_json()["error_description"]
    assert response.headers["WWW-Authenticate"].startswith("DPoP ")
    assert 'algs="ES256' in response.headers["WWW-Authenticate"]


@pytest.mark.parametrize("where", ["query", "cookie"])
def test_a_bound_token_in_a_query_string_or_cookie_is_refused(client, bound, where):
    if where == "query":
        response = client.get(INSPECT, query_string={"bearer_token": bound.access_token}, headers=headers())
    else:
        client.set_cookie("bearer_token", bound.access_token, domain="auth.example.com")
        response = client.get(INSPECT, headers=headers())
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"


def test_a_bound_token_presented_as_bearer_is_refused_by_the_admin_api_and_logout(client, bound):
    admin = client.get("/api/engine/v2/users", headers=headers(Authorization=f"Bearer {bound.access_token}"))
    assert admin.status_code == 401
    # Logout revokes a token presented with it, but not a bound one presented as Bearer: it stays live.
    client.get("/auth/logout", headers=headers(Authorization=f"Bearer {bound.access_token}"))
    assert dpop_get(client, INSPECT, bound).status_code == 200


def test_a_proof_for_another_url_is_refused(client, bound):
    proof = bound.proof(USERINFO_URL, "GET", access_token=bound.access_token)
    response = dpop_get(client, INSPECT, bound, proof=proof)
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_dpop_proof"
    assert "htu" in response.get_json()["error_description"]
    assert 'error="invalid_dpop_proof"' in response.headers["WWW-Authenticate"]


def test_a_proof_for_another_method_or_token_is_refused(client, bound):
    post = bound.proof(INSPECT_URL, "POST", access_token=bound.access_token)
    assert dpop_get(client, INSPECT, bound, proof=post).get_json()["error"] == "invalid_dpop_proof"
    other_token = bound.proof(INSPECT_URL, "GET", access_token="another token")
    refused = dpop_get(client, INSPECT, bound, proof=other_token).get_json()
    assert refused["error"] == "invalid_dpop_proof"
    assert "ath" in refused["error_description"]
    without_ath = bound.proof(INSPECT_URL, "GET")
    assert dpop_get(client, INSPECT, bound, proof=without_ath).get_json()["error"] == "invalid_dpop_proof"


def test_a_proof_by_another_key_is_refused(client, bound):
    thief = Holder()
    proof = thief.proof(INSPECT_URL, "GET", access_token=bound.access_token)
    response = dpop_get(client, INSPECT, bound, proof=proof)
    assert response.status_code == 401
    assert "key the token is bound to" in response.get_json()["error_description"]


def test_a_replayed_proof_is_refused_at_inspect(client, bound):
    proof = bound.proof(INSPECT_URL, "GET", access_token=bound.access_token)
    assert dpop_get(client, INSPECT, bound, proof=proof).status_code == 200
    replayed = dpop_get(client, INSPECT, bound, proof=proof)
    assert replayed.status_code == 401
    assert "jti" in replayed.get_json()["error_description"]


def test_the_dpop_scheme_without_a_proof_is_refused(client, bound):
    response = client.get(INSPECT, headers=headers(Authorization=f"DPoP {bound.access_token}"))
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_dpop_proof"


def test_a_bearer_token_presented_with_the_dpop_scheme_is_refused(client, setup):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    params = {"grant_type": "authorization_code", "code": code, "client_id": setup.public_app.client_id}
    token = client.post("/auth/oauth/token", data={**params, "redirect_uri": REDIRECT_URI}, headers=headers())
    holder = Holder()
    holder.access_token = token.get_json()["access_token"]
    response = dpop_get(client, INSPECT, holder)
    assert response.status_code == 401
    assert "not bound to a DPoP key" in response.get_json()["error_description"]


def test_userinfo_asks_for_the_nonce_and_then_answers_a_proof_with_it(client, bound):
    bound.nonce = None
    first = bound.remember(dpop_get(client, USERINFO, bound))
    assert first.status_code == 401
    assert first.get_json()["error"] == "use_dpop_nonce"
    assert 'error="use_dpop_nonce"' in first.headers["WWW-Authenticate"]
    assert first.headers["DPoP-Nonce"]
    retry = bound.remember(dpop_get(client, USERINFO, bound))
    assert retry.status_code == 200, retry.get_json()
    assert retry.get_json()["email"] == "person@example.com"
    assert retry.headers["DPoP-Nonce"]


def test_introspection_reports_a_bound_token_as_active_dpop_with_its_key(client, oidc, bound):
    response = client.post(
        "/auth/oauth/introspect",
        data={"token": bound.access_token},
        headers=headers(),
        auth=(oidc.app.client_id, oidc.secret),
    )
    body = response.get_json()
    assert body["active"] is True
    assert body["token_type"] == "DPoP"
    assert body["cnf"] == {"jkt": bound.jkt}


def test_a_refresh_with_a_proof_keeps_the_tokens_bound(client, oidc, bound):
    params = {"grant_type": "refresh_token", "refresh_token": bound.refresh_token}
    response = client.post(
        "/auth/oauth/token", data=params, headers=headers(DPoP=bound.proof()), auth=(oidc.app.client_id, oidc.secret)
    )
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["token_type"] == "DPoP"
    bound.access_token = response.get_json()["access_token"]
    assert dpop_get(client, INSPECT, bound).get_json()["cnf"] == {"jkt": bound.jkt}


@pytest.mark.postgresql
def test_inspects_fast_path_answers_a_bound_token_with_a_valid_proof_itself(app, bound):
    proof = bound.proof(INSPECT_URL, "GET", access_token=bound.access_token)
    response = through_fast_path(app, headers={"Authorization": f"DPoP {bound.access_token}", "DPoP": proof})
    assert response.status_code == 200
    assert response.get_json()["cnf"] == {"jkt": bound.jkt}


@pytest.mark.postgresql
@pytest.mark.parametrize("case", ["bearer", "no proof", "other url", "other key", "replayed", "two proofs"])
def test_inspects_fast_path_leaves_every_refusal_to_flask(app, bound, case):
    proof = bound.proof(INSPECT_URL, "GET", access_token=bound.access_token)
    sent = {"Authorization": f"DPoP {bound.access_token}", "DPoP": proof}
    if case == "bearer":
        sent = {"Authorization": f"Bearer {bound.access_token}"}
    elif case == "no proof":
        del sent["DPoP"]
    elif case == "other url":
        sent["DPoP"] = bound.proof(USERINFO_URL, "GET", access_token=bound.access_token)
    elif case == "other key":
        sent["DPoP"] = Holder().proof(INSPECT_URL, "GET", access_token=bound.access_token)
    elif case == "replayed":
        assert through_fast_path(app, headers=sent).status_code == 200
    elif case == "two proofs":
        sent["DPoP"] = f"{proof}, {proof}"
    response = through_fast_path(app, headers=sent)
    assert (response.status_code, response.get_data()) == (418, b"reached flask")
