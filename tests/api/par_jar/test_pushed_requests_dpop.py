"""DPoP at PAR (RFC 9449 10.1): a proof sent with a push (after the server's nonce) or a
pushed dpop_jkt binds the code to its key, refused to another key or none; a proof and a dpop_jkt must name the
same key, and a proof must be for PAR's URL. The requests are tests/helpers/pushed_requests.py's.
"""

from __future__ import annotations

import pytest

from tests.helpers import REDIRECT_URI, headers, location_params, signin
from tests.helpers.dpop import TOKEN_URL, Holder
from tests.helpers.pushed_requests import PAR_URL, assert_refused, authorize_pushed, push, pushed_uri

# DPoP at PAR (RFC 9449 10.1) ----------------------------------------------------------------------


def push_with_proof(client, auth: dict, holder: Holder, **params):
    """A push with a DPoP proof for PAR's URL, answering the server's use_dpop_nonce once as a client does."""
    for _ in range(2):
        response = holder.remember(push(client, {**auth, "DPoP": holder.proof(PAR_URL)}, **params))
        if response.status_code != 400 or response.get_json()["error"] != "use_dpop_nonce":
            break
    return response


def dpop_exchange(client, auth: dict, code: str, holder: Holder | None):
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    for _ in range(2):
        extra = {"DPoP": holder.proof()} if holder else {}
        response = client.post("/auth/oauth/token", data=data, headers=headers(**auth, **extra))
        if holder is None or response.get_json().get("error") != "use_dpop_nonce":
            return response
        holder.remember(response)
    return response


def pushed_code(client, app, auth: dict, holder: Holder | None = None, **params) -> str:
    """A code for a request pushed with a proof by ``holder`` (or none)."""
    response = push_with_proof(client, auth, holder, **params) if holder else push(client, auth, **params)
    signin(client)
    return location_params(authorize_pushed(client, app.client_id, pushed_uri(response)))["code"]


def test_a_proof_sent_to_par_binds_the_code_to_its_key(client, setup, confidential):
    app, auth = confidential
    holder = Holder()
    first = push(client, {**auth, "DPoP": holder.proof(PAR_URL, nonce=None)})
    # The server's nonce first (RFC 9449 8), as at the token endpoint.
    assert first.status_code == 400
    assert first.get_json()["error"] == "use_dpop_nonce"
    assert first.headers["DPoP-Nonce"]
    response = push_with_proof(client, auth, holder)
    assert response.status_code == 201, response.get_json()
    assert response.headers["DPoP-Nonce"] == holder.nonce
    signin(client)
    code = location_params(authorize_pushed(client, app.client_id, pushed_uri(response)))["code"]
    token = dpop_exchange(client, auth, code, holder)
    assert token.status_code == 200, token.get_json()
    assert token.get_json()["token_type"] == "DPoP"


@pytest.mark.parametrize("other", ["another key", "no proof"])
def test_a_code_bound_at_par_is_refused_to_another_key_or_none(client, confidential, other):
    app, auth = confidential
    code = pushed_code(client, app, auth, Holder())
    refused = dpop_exchange(client, auth, code, Holder() if other == "another key" else None)
    assert refused.get_json()["error"] == "invalid_grant", refused.get_json()
    assert "dpop_jkt" in refused.get_json()["error_description"]


def test_a_proof_and_a_pushed_dpop_jkt_must_name_the_same_key(client, confidential):
    _, auth = confidential
    holder = Holder()
    body = assert_refused(push_with_proof(client, auth, holder, dpop_jkt=Holder().jkt), "invalid_request")
    assert "dpop_jkt" in body["error_description"]
    assert pushed_uri(push_with_proof(client, auth, holder, dpop_jkt=holder.jkt))


def test_a_proof_for_another_url_is_refused_at_par(client, confidential):
    _, auth = confidential
    holder = Holder()
    push_with_proof(client, auth, holder)  # learns the nonce
    response = push(client, {**auth, "DPoP": holder.proof(TOKEN_URL)})
    assert assert_refused(response, "invalid_dpop_proof")["error_description"].endswith("this request's URI.")


def test_a_pushed_dpop_jkt_without_a_proof_binds_the_code(client, confidential):
    app, auth = confidential
    holder = Holder()
    code = pushed_code(client, app, auth, dpop_jkt=holder.jkt)
    assert dpop_exchange(client, auth, code, Holder()).get_json()["error"] == "invalid_grant"
    code = pushed_code(client, app, auth, dpop_jkt=holder.jkt)
    assert dpop_exchange(client, auth, code, holder).status_code == 200
