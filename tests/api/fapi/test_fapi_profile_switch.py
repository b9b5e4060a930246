"""Switching a domain to the FAPI 2.0 profile takes effect for what it issued before (docs/fapi.md#switching-a-domain).

The profile forbids bearer tokens and authorisation requests that were not
pushed. Tokens and codes a standard domain issued are of that kind; were they
honoured after the switch, the profile would hold only for new clients, for as
long as a refresh token lasts.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord, Domain
from tests.helpers import OTHER_HOST, REDIRECT_URI, headers, location_params, pkce_pair, signin
from tests.helpers.dpop import Holder
from tests.helpers.fapi import INSPECT, authorize_request, keyed_application, token_request, with_proof


@pytest.fixture
def tenant(world):
    """A standard domain whose one application already complies with the profile, and a person."""
    domain = world.save(Domain(name=OTHER_HOST, host=OTHER_HOST, scopes="public mqtt.read openid"))
    service = world.user(domain, f"service@{OTHER_HOST}", service_account=True)

    class Tenant:
        keyed = keyed_application(world, domain, service)
        person = world.user(domain, f"person@{OTHER_HOST}", name="Person")

    Tenant.domain = domain
    return Tenant


def _code(client, tenant, pushed: bool) -> tuple[str, str]:
    verifier, challenge = pkce_pair()
    response = authorize_request(
        client,
        tenant.keyed,
        OTHER_HOST,
        pushed=pushed,
        scope="openid mqtt.read",
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    assert response.status_code == 302, response.get_data(as_text=True)
    return location_params(response)["code"], verifier


def _exchange(client, tenant, code: str, verifier: str, holder):
    body = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "code_verifier": verifier}
    return token_request(client, tenant.keyed, OTHER_HOST, holder=holder, **body)


def _switch(runner) -> None:
    result = runner.invoke(args=["domains", "update", "--domain", OTHER_HOST, "--profile", "fapi2"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["profile"] == "fapi2"


def _bearer(token: str) -> dict:
    return headers(OTHER_HOST, Authorization=f"Bearer {token}")


def test_bearer_tokens_and_their_refresh_tokens_are_revoked_at_the_switch(client, runner, world, tenant):
    signin(client, tenant.person.email, host=OTHER_HOST)
    issued = _exchange(client, tenant, *_code(client, tenant, pushed=False), holder=None).get_json()
    assert issued["token_type"] == "bearer"
    assert client.get(INSPECT, headers=_bearer(issued["access_token"])).status_code == 200
    _switch(runner)
    # Inspect's fast path and UserInfo: the next request is refused (presented as the profile wants it, too).
    assert client.get(INSPECT, headers=_bearer(issued["access_token"])).status_code == 401
    assert client.get("/auth/oauth/userinfo", headers=_bearer(issued["access_token"])).status_code == 401
    refreshed = token_request(
        client,
        tenant.keyed,
        OTHER_HOST,
        holder=Holder(),
        grant_type="refresh_token",
        refresh_token=issued["refresh_token"],
    )
    assert refreshed.status_code == 400, refreshed.get_json()
    assert refreshed.get_json()["error"] == "invalid_grant"
    audited = world.query(select(AuditRecord).where(AuditRecord.event == "token.revoked"))
    assert [(r.domain_id, r.details) for r in audited] == [(tenant.domain.id, {"count": 1, "via": "fapi2_profile"})]


@pytest.mark.parametrize("pushed", [False, True], ids=["not pushed", "pushed"])
def test_a_code_issued_before_the_switch_is_refused_after_it(client, runner, tenant, pushed):
    signin(client, tenant.person.email, host=OTHER_HOST)
    code, verifier = _code(client, tenant, pushed=pushed)
    _switch(runner)
    response = _exchange(client, tenant, code, verifier, holder=Holder())
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["error"] == "invalid_grant" and "access_token" not in body
    assert "docs/fapi.md#switching-a-domain" in body["error_description"]


def test_what_the_profile_itself_issues_outlives_the_switch(client, runner, tenant):
    """A DPoP-bound client-credentials token of a private_key_jwt client is what the profile issues: it stays;
    and a code issued under the profile is exchanged as usual."""
    holder = Holder()
    response = token_request(
        client, tenant.keyed, OTHER_HOST, holder=holder, grant_type="client_credentials", scope="mqtt.read"
    )
    assert response.status_code == 200, response.get_json()
    bound = response.get_json()["access_token"]
    _switch(runner)
    assert client.get(INSPECT, headers=with_proof(holder, bound, host=OTHER_HOST)).status_code == 200
    signin(client, tenant.person.email, host=OTHER_HOST)
    verifier, challenge = pkce_pair()
    pushed = authorize_request(client, tenant.keyed, OTHER_HOST, code_challenge=challenge, code_challenge_method="S256")
    assert pushed.status_code == 303, pushed.get_data(as_text=True)
    exchanged = _exchange(client, tenant, location_params(pushed)["code"], verifier, holder=Holder())
    assert exchanged.status_code == 200, exchanged.get_json()
