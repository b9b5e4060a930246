"""Shared Signals for the tests: the service served on loopback (so that a receiver reads the configuration and
the JWKS over HTTP, as a real one does), a push receiver on loopback that verifies every SET it is POSTed
against that JWKS, and a receiving application with the reserved `ssf` scope."""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import requests
from joserfc import jwt
from joserfc.jwk import KeySet
from werkzeug.serving import make_server

from authsvc.outbox.sender import Sender
from tests.helpers import HOST, QUICK_SHUTDOWN, headers

PUSH = "urn:ietf:rfc:8935"
POLL = "urn:ietf:rfc:8936"
CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
SESSION_REVOKED = CAEP + "session-revoked"
CREDENTIAL_CHANGE = CAEP + "credential-change"
ACCOUNT_DISABLED = RISC + "account-disabled"
ACCOUNT_ENABLED = RISC + "account-enabled"
ACCOUNT_PURGED = RISC + "account-purged"
IDENTIFIER_CHANGED = RISC + "identifier-changed"
VERIFICATION = "https://schemas.openid.net/secevent/ssf/event-type/verification"
ALL_EVENTS = [SESSION_REVOKED, CREDENTIAL_CHANGE, ACCOUNT_DISABLED, ACCOUNT_ENABLED, ACCOUNT_PURGED, IDENTIFIER_CHANGED]


class Served:
    """The app on a loopback port: what the test reaches over a socket, with the domain's Host, as behind a
    TLS terminator (the issuer is https, as the test client's is)."""

    def __init__(self, app, host: str = HOST):
        def behind_tls(environ, start_response):
            environ["wsgi.url_scheme"] = "https"
            return app(environ, start_response)

        self.server = make_server("127.0.0.1", 0, behind_tls, threaded=True)
        self.base = f"http://127.0.0.1:{self.server.server_port}"
        self.host = host
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()

    def get(self, url: str) -> requests.Response:
        """GET an absolute URL of the service (its issuer's origin), at the loopback port."""
        parts = urlsplit(url)
        return requests.get(self.base + parts.path, headers={"Host": self.host}, timeout=5)

    def stop(self) -> None:
        self.server.shutdown()


class Verifier:
    """What a receiver does with a SET: discovers the transmitter, fetches its JWKS over HTTP, and verifies
    the signature, ``typ`` (RFC 8417 2.3), ``iss`` and ``aud``; answers the claims."""

    def __init__(self, served: Served, audience: str):
        configuration = served.get(f"http://{served.host}/.well-known/ssf-configuration")
        assert configuration.status_code == 200
        self.configuration = configuration.json()
        self.issuer = self.configuration["issuer"]
        self.audience = audience
        self.served = served
        self.keys = self._fetch()

    def _fetch(self) -> KeySet:
        response = self.served.get(self.configuration["jwks_uri"])
        assert response.status_code == 200
        return KeySet.import_key_set(response.json())

    def verify(self, token: str) -> dict:
        header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
        assert header["typ"] == "secevent+jwt"
        if self.keys.get_by_kid(header["kid"]) is None:
            self.keys = self._fetch()  # a key rotated since: fetched again, as a receiver does on an unknown kid
        decoded = jwt.decode(token, self.keys, algorithms=[header["alg"]])
        claims = decoded.claims
        assert claims["iss"] == self.issuer
        assert claims["aud"] == self.audience
        assert set(claims) >= {"iss", "jti", "iat", "aud", "txn", "sub_id", "events"}
        assert "exp" not in claims  # RFC 8417 2.2: a SET is not an access token
        return claims


class PushReceiver:
    """An RFC 8935 receiver on loopback: verifies each SET (a bad one is answered 400 with RFC 8935's error),
    checks the Authorization header it was given, and keeps the claims; answers 202, or ``status``."""

    def __init__(self, authorization: str = "Bearer receiver-secret"):
        self.authorization = authorization
        self.verifier: Verifier | None = None
        self.received: list[dict] = []
        self.raw: list[str] = []
        self.refused: list[str] = []
        self.status = 202
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.start()
        self.url = f"http://127.0.0.1:{self.port}/events"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                status, answer = receiver.take(dict(self.headers), body)
                data = json.dumps(answer).encode() if answer else b""
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                if data:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()

    def take(self, sent: dict, body: str) -> tuple[int, dict | None]:
        if sent.get("Authorization") != self.authorization:
            return 401, None
        if sent.get("Content-Type") != "application/secevent+jwt":
            return 400, {"err": "invalid_request", "description": "not a SET"}
        try:
            claims = self.verifier.verify(body)
        except Exception as exc:  # noqa: BLE001 - anything that fails verification is refused as RFC 8935 says
            self.refused.append(body)
            return 400, {"err": "invalid_key", "description": type(exc).__name__}
        if self.status >= 300:
            return self.status, None
        self.raw.append(body)
        self.received.append(claims)
        return 202, None

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def wait(self, count: int, timeout: float = 10) -> list[dict]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.received


def ssf_sender(app, name: str = "test") -> Sender:
    """The sender a worker runs for SETs: its own, a few at once, as the webhooks'."""
    return Sender(app, name=name, kinds=["ssf"], workers=4)


def events_of(received: list[dict]) -> list[str]:
    """The event type of each SET, in the order received (each SET here carries one event)."""
    return [event for claims in received for event in claims["events"]]


def bearer(token: str) -> dict:
    return headers(Authorization=f"Bearer {token}")


def receiver_token(client, client_id: str, secret: str, scope: str = "ssf") -> str:
    basic = "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "client_credentials", "scope": scope},
        headers=headers(Authorization=basic),
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["access_token"]


def assert_ssf_error(response, status: int, err: str | None = None) -> dict:
    """An SSF refusal (RFC 8935 2.4): ``status``, a body of exactly ``err`` and ``description``; its body."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"err", "description"} and body["description"]
    if err is not None:
        assert body["err"] == err
    return body
