"""OpenID Connect logout for the tests: an application's back-channel logout endpoint on loopback,
an app that may reach it, the relying party registered with it, and ID tokens to hint with.

Used by tests/api/oidc/test_oidc_logout.py and tests/api/oidc/test_oidc_logout_backchannel.py, which import the
fixtures they need from here, and by tests/e2e/test_oidc_relying_parties.py.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from authsvc.core import store
from authsvc.oauth import backchannel
from tests.helpers import QUICK_SHUTDOWN, REDIRECT_URI, HttpsClient, empty_database, get_code, headers, signin

END_SESSION = "/auth/oauth/end_session"
POST_LOGOUT = "https://app.example.com/signed-out"


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
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()

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
        empty_database(app)
        store.client().flushdb()
    return app


@pytest.fixture
def receiver():
    made = Receiver()
    yield made
    backchannel.flush(timeout=5.0)  # nothing of this test reaches the next one
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
