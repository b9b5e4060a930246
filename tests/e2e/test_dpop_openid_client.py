"""DPoP (RFC 9449) with a client nobody here wrote: panva's openid-client 6 over HTTP against gunicorn.

tests/rp/dpop.mjs, as a public application that requires DPoP (``apps create --dpop``):
a code flow bound by ``dpop_jkt``, the token request's ``use_dpop_nonce`` answered by
openid-client's own retry, UserInfo and inspect with DPoP, a refresh with the same key;
then the refusals: the token as Bearer, a proof for another URL, a replayed proof, a
refresh with another key.
"""

from __future__ import annotations

import pytest

from tests.helpers.relying_party import PASSWORD, REDIRECT_URI, SCOPES, run_harness, seed_domain
from tests.helpers.servers import running_service

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    with running_service(tmp_path_factory.mktemp("instance")) as svc:
        seed_domain(svc, PASSWORD, SCOPES, "--name", "DPoP")
        svc.app = svc.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "DPoP RP",
            "--redirect-uri",
            REDIRECT_URI,
            "--scopes",
            SCOPES,
            "--dpop",
        )
        yield svc


def test_openid_client_runs_a_dpop_bound_code_flow_and_meets_every_refusal(openid_client, service):  # noqa: F811
    steps = run_harness(openid_client, "dpop.mjs", service, service.app, PASSWORD, "--scope", "openid profile email")
    assert "ES256" in steps["discovery"]["dpop_signing_alg_values_supported"]
    # The first token request had no nonce: use_dpop_nonce (400), and openid-client's retry with it got the tokens.
    token = steps["token"]
    assert [r["status"] for r in token["requests"] if r["path"] == "/auth/oauth/token"] == [400, 200]
    assert token["token_type"] == "dpop"  # openid-client lower-cases it
    # UserInfo and inspect with DPoP, the nonce carried over from the token endpoint (the same origin).
    assert steps["userinfo"]["email"] == "alice@example.com"
    assert all(r["authorization"] == "DPoP" for r in steps["userinfo"]["requests"])
    assert steps["inspect"]["status"] == 200
    assert steps["inspect"]["body"]["cnf"] == {"jkt": token["jkt"]}
    assert steps["refresh"]["token_type"] == "dpop"
    assert steps["bearer_downgrade"]["status"] == 401
    assert steps["bearer_downgrade"]["body"]["error"] == "invalid_token"
    assert steps["proof_for_another_url"]["status"] == 401
    assert steps["proof_for_another_url"]["body"]["error"] == "invalid_dpop_proof"
    assert steps["replayed_proof"]["status"] == 401
    assert "jti" in steps["replayed_proof"]["body"]["error_description"]
    assert steps["refresh_with_another_key"]["error"] == "invalid_grant"
