"""Back-Channel Logout 1.0: which sign-outs send a Logout Token to the
applications, what the token holds, and receivers that fail or may not be reached.

Back-channel logouts are received by a small HTTP server on loopback, and each
Logout Token is validated against the domain's published JWKS.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select

from authsvc.core.models import AuditRecord
from tests.fakes.slow_peer import SlowPeer
from tests.helpers import HOST, headers, signin
from tests.helpers import oidc_logout as oidc_logout_helpers
from tests.helpers.oidc_logout import END_SESSION, Receiver, browser, claims_of, id_token

# Back-channel receivers on loopback need the operator's setting: this module's app allows it.
app = oidc_logout_helpers.app

EVENT = "http://schemas.openid.net/event/backchannel-logout"


def assert_logout_token(client, received, rp, id_claims):
    assert received["content_type"] == "application/x-www-form-urlencoded"
    (token,) = received["form"]["logout_token"]
    jwks = KeySet.import_key_set(client.get("/auth/oauth/jwks", headers=headers()).get_json())
    decoded = jwt.decode(token, jwks, algorithms=["RS256"])
    assert decoded.header["typ"] == "logout+jwt"
    assert decoded.header["kid"] in {k["kid"] for k in jwks.keys}
    claims = decoded.claims
    assert claims["iss"] == f"https://{HOST}" == id_claims["iss"]
    assert claims["aud"] == rp.app.client_id
    assert claims["sub"] == id_claims["sub"]
    assert claims["sid"] == id_claims["sid"]
    assert claims["events"] == {EVENT: {}}
    assert claims["jti"]
    assert claims["iat"] <= time.time() < claims["exp"]
    assert "nonce" not in claims


def test_signing_out_sends_a_logout_token_to_the_application(client, rp, receiver):
    signin(client)
    id_claims = claims_of(client, id_token(client, rp)["id_token"])
    response = client.get("/auth/logout", headers=headers())
    assert response.status_code == 303
    (received,) = receiver.wait()
    assert_logout_token(client, received, rp, id_claims)


def test_rp_initiated_logout_sends_a_logout_token(client, rp, receiver):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    client.get(END_SESSION, query_string={"id_token_hint": hint}, headers=headers())
    (received,) = receiver.wait()
    assert_logout_token(client, received, rp, claims_of(client, hint))


def test_logout_everywhere_tells_the_applications_of_every_session(client, app, rp, receiver):
    signin(client)
    first = claims_of(client, id_token(client, rp)["id_token"])
    second = claims_of(client, id_token(browser(app), rp)["id_token"])
    access_token = id_token(client, rp)["access_token"]  # a third ID token, in the first session
    response = client.post("/auth/logout/all", headers=headers(Authorization=f"Bearer {access_token}"))
    assert response.status_code == 200
    received = receiver.wait(2)
    time.sleep(0.2)  # no more than one per session
    sids = sorted(claims_of(client, r["form"]["logout_token"][0])["sid"] for r in receiver.received)
    assert len(received) == 2
    assert sids == sorted([first["sid"], second["sid"]])


@pytest.fixture
def admin_key(world, rp):
    admin = world.user(rp.domain, "admin@example.com", admin=True)
    return world.api_key(admin, scopes="public admin", permission="admin")


def test_an_admin_disabling_the_user_sends_a_logout_token(client, rp, receiver, admin_key):
    signin(client)
    id_claims = claims_of(client, id_token(client, rp)["id_token"])
    response = client.patch(
        f"/api/engine/v2/users/{rp.person.id}", json={"disabled": True}, headers=headers(**{"X-API-Key": admin_key})
    )
    assert response.status_code == 200
    (received,) = receiver.wait()
    assert_logout_token(client, received, rp, id_claims)


def test_an_admin_ending_the_users_sessions_sends_a_logout_token(client, rp, receiver, admin_key):
    signin(client)
    id_claims = claims_of(client, id_token(client, rp)["id_token"])
    response = client.post(f"/api/engine/v2/users/{rp.person.id}/revoke", headers=headers(**{"X-API-Key": admin_key}))
    assert response.status_code == 200
    (received,) = receiver.wait()
    assert_logout_token(client, received, rp, id_claims)


def test_a_session_without_id_tokens_or_an_application_without_the_uri_sends_nothing(client, oidc, receiver):
    signin(client)
    id_token(client, oidc)  # no backchannel_logout_uri registered
    client.get("/auth/logout", headers=headers())
    time.sleep(0.3)
    assert receiver.received == []


def test_a_failing_receiver_never_blocks_the_logout_and_is_audited(client, rp, receiver, world):
    receiver.status = 500
    signin(client)
    id_token(client, rp)
    started = time.monotonic()
    response = client.get("/auth/logout", headers=headers())
    assert response.status_code == 303
    assert time.monotonic() - started < 1
    assert len(receiver.wait(3)) == 3  # AUTHSVC_BACKCHANNEL_ATTEMPTS, with backoff
    deadline = time.monotonic() + 5
    records = []
    while not records and time.monotonic() < deadline:
        records = world.query(select(AuditRecord).where(AuditRecord.event == "backchannel_logout.failed"))
        time.sleep(0.05)
    (record,) = records
    assert record.target == f"application:{rp.app.id}"
    assert record.details["reason"] == "HTTP 500 after 3 attempts"
    assert "logout_token" not in json.dumps(record.details)


def test_a_receiver_that_refuses_the_token_is_not_retried(client, rp, receiver):
    receiver.status = 400
    signin(client)
    id_token(client, rp)
    client.get("/auth/logout", headers=headers())
    receiver.wait(1)
    time.sleep(0.3)
    assert len(receiver.received) == 1


def test_without_the_operators_setting_a_loopback_receiver_is_refused_and_audited(make_app, rp, receiver, world):
    # The default: applications' back-channel URIs must be public https.
    client = browser(make_app())
    id_token(client, rp)
    client.get("/auth/logout", headers=headers())
    deadline = time.monotonic() + 5
    records = []
    while not records and time.monotonic() < deadline:
        records = world.query(select(AuditRecord).where(AuditRecord.event == "backchannel_logout.failed"))
        time.sleep(0.05)
    assert records[0].details["reason"] == "refused by the outbound rules"
    assert receiver.received == []


def test_signing_in_again_in_the_same_browser_ends_the_old_session_and_tells_its_applications(client, rp, receiver):
    signin(client)
    id_claims = claims_of(client, id_token(client, rp)["id_token"])
    signin(client)  # the browser's session is replaced by a new one
    (received,) = receiver.wait()
    assert_logout_token(client, received, rp, id_claims)


def test_a_password_change_by_an_admin_tells_the_applications(client, rp, receiver, admin_key):
    signin(client)
    id_claims = claims_of(client, id_token(client, rp)["id_token"])
    response = client.patch(
        f"/api/engine/v2/users/{rp.person.id}",
        json={"password": "another long password"},
        headers=headers(**{"X-API-Key": admin_key}),
    )
    assert response.status_code == 200
    (received,) = receiver.wait()
    assert_logout_token(client, received, rp, id_claims)


# Receivers that stall


def failures(world, timeout: float = 5) -> list[AuditRecord]:
    deadline = time.monotonic() + timeout
    records = []
    while not records and time.monotonic() < deadline:
        records = world.query(select(AuditRecord).where(AuditRecord.event == "backchannel_logout.failed"))
        time.sleep(0.02)
    return records


@pytest.fixture
def stalling(app, world, rp):
    """The application's receiver answers one byte every 0.2 s; the outbound deadline is 1 s, one attempt."""
    app.config.update(AUTHSVC_OUTBOUND_DEADLINE=1, AUTHSVC_BACKCHANNEL_ATTEMPTS=1)
    with SlowPeer(trickle=0.2) as peer:
        world.update(type(rp.app), rp.app.id, backchannel_logout_uri=peer.url)
        yield peer


def test_a_receiver_that_trickles_its_answer_is_cut_off_at_the_deadline(client, rp, world, stalling):
    # Each byte comes well within AUTHSVC_BACKCHANNEL_TIMEOUT (2 s here): only the deadline ends the wait.
    signin(client)
    id_token(client, rp)
    client.get("/auth/logout", headers=headers())
    started = time.monotonic()
    (record,) = failures(world)
    assert time.monotonic() - started < 3
    assert record.target == f"application:{rp.app.id}"
    assert record.details["reason"] == "DeadlineExceeded after 1 attempts"
    assert len(stalling.requests) == 1


def test_a_stalling_receiver_delays_only_its_own_applications_logouts(app, client, rp, oidc, world, stalling):
    other = Receiver()
    try:
        world.update(type(oidc.es256_app), oidc.es256_app.id, backchannel_logout_uri=other.url)
        fast = SimpleNamespace(app=oidc.es256_app, secret=oidc.es256_secret)
        signin(client)
        browsers = [client, browser(app), browser(app)]
        for each in browsers:
            id_token(each, rp)
            id_token(each, fast)
        for each in browsers:
            each.get("/auth/logout", headers=headers())
        # Three sessions end: the other application hears of each at once, while the stalling
        # receiver's logouts wait their turn, one at a time, each cut off at the deadline.
        assert len(other.wait(3, timeout=2.5)) == 3
        assert (
            sorted(claims_of(client, r["form"]["logout_token"][0])["aud"] for r in other.received)
            == [oidc.es256_app.client_id] * 3
        )
        assert len(failures(world)) >= 1
    finally:
        other.close()
