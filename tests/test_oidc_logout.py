"""RP-Initiated Logout 1.0 and Back-Channel Logout 1.0 (issue 15, points 6 and 7).

Back-channel logouts are received by a small HTTP server on loopback, and each
Logout Token is validated against the domain's published JWKS.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select

from authsvc.core import store
from authsvc.core.models import AuditRecord, Domain
from authsvc.oauth import keys
from authsvc.oauth.backchannel import DISPATCHER
from tests.conftest import (
    HOST,
    OTHER_HOST,
    REDIRECT_URI,
    HttpsClient,
    _empty_database,
    get_code,
    headers,
    signin,
)
from tests.test_pages import csrf_token

END_SESSION = "/auth/oauth/end_session"
POST_LOGOUT = "https://app.example.com/signed-out"
EVENT = "http://schemas.openid.net/event/backchannel-logout"


class Receiver:
    """An application's back-channel logout endpoint on loopback: records each POST, answers ``status``."""

    def __init__(self, status: int = 200):
        self.status = status
        self.received: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                receiver.received.append({"content_type": self.headers["Content-Type"], "form": form})
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/backchannel"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, count: int = 1, timeout: float = 10) -> list[dict]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.received

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def app(make_app):
    # Loopback receivers need the operator's setting; retries are quick here.
    app = make_app(
        AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS=True,
        AUTHSVC_BACKCHANNEL_BACKOFF=0.05,
        AUTHSVC_BACKCHANNEL_TIMEOUT=2,
    )
    with app.app_context():
        _empty_database(app)
        store.client().flushdb()
    return app


@pytest.fixture
def receiver():
    made = Receiver()
    yield made
    DISPATCHER.flush(timeout=5.0)  # nothing of this test reaches the next one
    made.close()


@pytest.fixture
def rp(world, oidc, receiver):
    """The OpenID Connect application with a post-logout URI and a back-channel logout URI."""
    world.update(
        type(oidc.app),
        oidc.app.id,
        post_logout_redirect_uris=[POST_LOGOUT],
        backchannel_logout_uri=receiver.url,
    )
    return oidc


def browser(app):
    """Another browser, signed in as the person."""
    app.test_client_class = HttpsClient
    client = app.test_client()
    signin(client)
    return client


def id_token(client, oidc, scope="openid"):
    code = get_code(client, oidc.app.client_id, scope=scope, nonce="n")
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        headers=headers(),
        auth=(oidc.app.client_id, oidc.secret),
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def claims_of(client, token):
    return jwt.decode(token, KeySet.import_key_set(client.get("/auth/oauth/jwks", headers=headers()).get_json())).claims


def signed_in(client) -> bool:
    return client.get("/auth/login", headers=headers()).get_data(as_text=True).count('name="password"') == 0


# RP-initiated logout


def test_discovery_names_the_end_session_endpoint_and_back_channel_support(client, oidc):
    document = client.get("/.well-known/openid-configuration", headers=headers()).get_json()
    assert document["end_session_endpoint"] == f"https://{HOST}/auth/oauth/end_session"
    assert document["backchannel_logout_supported"] is True
    assert document["backchannel_logout_session_supported"] is True
    rfc8414 = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert rfc8414["end_session_endpoint"] == document["end_session_endpoint"]


def test_a_valid_hint_and_registered_uri_end_the_session_and_redirect_with_state(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    response = client.get(
        END_SESSION,
        query_string={"id_token_hint": hint, "post_logout_redirect_uri": POST_LOGOUT, "state": "xyz"},
        headers=headers(),
    )
    assert response.status_code == 303
    assert response.headers["Location"] == f"{POST_LOGOUT}?state=xyz"
    assert client.get_cookie("user", domain=HOST) is None
    assert not signed_in(client)


def test_the_relying_party_may_post_the_logout_request(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    response = client.post(
        END_SESSION,
        data={"id_token_hint": hint, "client_id": rp.app.client_id, "post_logout_redirect_uri": POST_LOGOUT},
        headers=headers(),
    )
    assert response.status_code == 303
    assert response.headers["Location"] == POST_LOGOUT
    assert not signed_in(client)


def test_an_expired_hint_is_still_accepted(make_app, rp, world):
    client = browser(make_app(AUTHSVC_ID_TOKEN_TTL=-10))
    hint = id_token(client, rp)["id_token"]
    assert claims_of(client, hint)["exp"] < time.time()
    response = client.get(
        END_SESSION, query_string={"id_token_hint": hint, "post_logout_redirect_uri": POST_LOGOUT}, headers=headers()
    )
    assert response.status_code == 303
    assert response.headers["Location"] == POST_LOGOUT


def test_a_hint_signed_by_another_domains_key_is_refused(client, rp, world):
    world.domain(OTHER_HOST, scopes="public openid")
    signin(client)
    # The same claims, signed with OTHER_HOST's key: not an ID token of this domain.
    ours = claims_of(client, id_token(client, rp)["id_token"])
    with client.application.test_request_context(base_url=f"https://{OTHER_HOST}"):
        forged = keys.sign(Domain.query.filter_by(host=OTHER_HOST).one(), ours)
    response = client.get(
        END_SESSION, query_string={"id_token_hint": forged, "post_logout_redirect_uri": POST_LOGOUT}, headers=headers()
    )
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"
    assert "Location" not in response.headers
    assert signed_in(client)


@pytest.mark.parametrize("hint", ["garbage", "a.b.c", "x" * 9000])
def test_a_malformed_hint_is_a_clear_400(client, rp, hint):
    response = client.get(END_SESSION, query_string={"id_token_hint": hint}, headers=headers())
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"


def test_a_client_id_that_is_not_the_hints_audience_is_refused(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    response = client.get(
        END_SESSION,
        query_string={
            "id_token_hint": hint,
            "client_id": rp.es256_app.client_id,
            "post_logout_redirect_uri": POST_LOGOUT,
        },
        headers=headers(),
    )
    assert response.status_code == 400
    assert signed_in(client)


def test_an_unregistered_post_logout_uri_never_redirects(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    for uri in ("https://evil.example/", POST_LOGOUT + "/", POST_LOGOUT + "?x=1"):
        response = client.get(
            END_SESSION, query_string={"id_token_hint": hint, "post_logout_redirect_uri": uri}, headers=headers()
        )
        assert response.status_code == 200
        assert "Location" not in response.headers
        assert "You are signed out" in response.get_data(as_text=True)
    assert not signed_in(client)


def test_without_a_hint_the_user_confirms_with_a_csrf_protected_form(client, rp):
    signin(client)
    query = {"client_id": rp.app.client_id, "post_logout_redirect_uri": POST_LOGOUT, "state": "s1"}
    page = client.get(END_SESSION, query_string=query, headers=headers())
    assert page.status_code == 200
    assert "Sign out?" in page.get_data(as_text=True)
    assert signed_in(client)  # asking ends nothing

    forged = client.post(END_SESSION, data={**query, "confirm": "1", "csrf_token": "forged"}, headers=headers())
    assert forged.status_code == 400
    assert signed_in(client)

    cancelled = client.post(
        END_SESSION, data={**query, "cancel": "1", "csrf_token": csrf_token(page)}, headers=headers()
    )
    assert cancelled.status_code == 200
    assert signed_in(client)

    confirmed = client.post(
        END_SESSION, data={**query, "confirm": "1", "csrf_token": csrf_token(page)}, headers=headers()
    )
    assert confirmed.status_code == 303
    assert confirmed.headers["Location"] == f"{POST_LOGOUT}?state=s1"
    assert not signed_in(client)


def test_a_hint_of_another_user_asks_before_ending_this_session(client, rp, world):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    world.user(rp.domain, "second@example.com")
    signin(client, "second@example.com")
    response = client.get(END_SESSION, query_string={"id_token_hint": hint}, headers=headers())
    assert response.status_code == 200
    assert "Sign out?" in response.get_data(as_text=True)
    assert signed_in(client)


def test_without_a_session_a_valid_request_just_redirects(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    client.get("/auth/logout", headers=headers())
    response = client.get(
        END_SESSION, query_string={"id_token_hint": hint, "post_logout_redirect_uri": POST_LOGOUT}, headers=headers()
    )
    assert response.status_code == 303
    assert response.headers["Location"] == POST_LOGOUT


# Back-channel logout


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
