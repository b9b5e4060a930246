"""Identity providers for the SSO tests: real HTTP servers on loopback.

One small Flask application plays an OpenID Connect provider (discovery, JWKS,
RS256 ID tokens) or a plain OAuth 2.0 provider (userinfo, refresh tokens with
rotation). A test sets what the next sign-in looks like and how the provider
misbehaves.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from typing import Any
from urllib.parse import urlencode

from flask import Flask, Response, jsonify, redirect, request
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from werkzeug.serving import make_server

from tests.helpers import QUICK_SHUTDOWN

_KEY = RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig", "alg": "RS256"})
_OTHER_KEY = RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig", "alg": "RS256"})


class Provider:
    """A running provider. ``kind`` is "oidc" or "oauth2"."""

    def __init__(self, kind: str = "oidc", client_id: str = "authsvc", client_secret: str = "provider-secret"):  # noqa: S107
        self.kind = kind
        self.client_id = client_id
        self.client_secret = client_secret
        self.claims: dict[str, Any] = {}
        self.userinfo: dict[str, Any] | None = None
        self.granted_scope: str | None = None
        self.expires_in = 3600
        self.issue_refresh_token = True
        # Fault switches: None, "deny", "garbage", "error500", "slow", "bad_signature",
        # "wrong_aud", "wrong_nonce", "wrong_iss", "expired", "refuse_refresh",
        # "redirect" (discovery answers a redirect), "trickle" (the token answer comes a byte every
        # 0.2 s, for 6 s).
        self.fault: str | None = None
        self.slow_seconds = 3.0
        self.codes: dict[str, dict] = {}
        self.tokens: dict[str, dict] = {}
        self.refresh_tokens: dict[str, dict] = {}
        self.refreshes = 0
        self.token_requests: list[dict] = []
        # The signing key the JWKS publishes and ID tokens carry; rotate_key() replaces it.
        self.key = _KEY
        self.jwks_requests = 0
        # Claims to set in the next ID tokens over everything else (e.g. several audiences).
        self.id_token_overrides: dict[str, Any] = {}
        # ID tokens without a kid header (the JWKS still names its key).
        self.omit_kid = False
        self.discovery_requests = 0
        # Each request's path and W3C traceparent header (None without one), as they arrived.
        self.traceparents: list[tuple[str, str | None]] = []
        self.app = self._build()
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def sign_in_as(self, **claims: Any) -> None:
        self.claims = claims

    def rotate_key(self) -> None:
        """Sign with a new key under a new kid, and publish only that one (as providers rotate)."""
        kid = f"key-{secrets.token_hex(4)}"
        self.key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})

    def __enter__(self) -> Provider:
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()

    # The application.

    def _build(self) -> Flask:  # noqa: C901 - the provider's endpoints and their faults, nested to share it
        app = Flask(f"provider-{id(self)}")
        provider = self

        @app.before_request
        def note_traceparent():
            provider.traceparents.append((request.path, request.headers.get("traceparent")))

        @app.get("/.well-known/openid-configuration")
        @app.get("/elsewhere/.well-known/openid-configuration")
        def discovery():
            provider.discovery_requests += 1
            if provider.fault == "redirect" and not request.path.startswith("/elsewhere/"):
                return redirect(provider.url + "/elsewhere/.well-known/openid-configuration")
            return jsonify(
                issuer=provider.url,
                authorization_endpoint=provider.url + "/authorize",
                token_endpoint=provider.url + "/token",
                userinfo_endpoint=provider.url + "/userinfo",
                jwks_uri=provider.url + "/jwks",
                response_types_supported=["code"],
                subject_types_supported=["public"],
                id_token_signing_alg_values_supported=["RS256"],
            )

        @app.get("/jwks")
        def jwks():
            provider.jwks_requests += 1
            return jsonify(KeySet([provider.key]).as_dict(private=False))

        @app.get("/authorize")
        def authorize():
            args = request.args
            if provider.fault == "deny":
                return redirect(
                    args["redirect_uri"] + "?" + urlencode({"error": "access_denied", "state": args["state"]})
                )
            code = secrets.token_urlsafe(16)
            provider.codes[code] = {
                "client_id": args["client_id"],
                "redirect_uri": args["redirect_uri"],
                "challenge": args.get("code_challenge"),
                "method": args.get("code_challenge_method"),
                "nonce": args.get("nonce"),
                "scope": args.get("scope", ""),
                "claims": dict(provider.claims),
            }
            return redirect(args["redirect_uri"] + "?" + urlencode({"code": code, "state": args["state"]}))

        @app.post("/token")
        def token():  # noqa: C901 - one branch per fault a test can ask the provider for
            form = request.form
            provider.token_requests.append(dict(form))
            if provider.fault == "slow":
                time.sleep(provider.slow_seconds)
            if provider.fault == "trickle":
                return Response(_trickle(), 200, {"Content-Type": "application/json"})
            if provider.fault == "garbage":
                return "<html>not json</html>", 200, {"Content-Type": "application/json"}
            if provider.fault == "error500":
                return "oops", 500
            if not provider._client_authenticated():
                return jsonify(error="invalid_client"), 401
            if form.get("grant_type") == "authorization_code":
                grant = provider.codes.pop(form.get("code", ""), None)
                if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
                    return jsonify(error="invalid_grant"), 400
                if grant["challenge"]:
                    digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
                    if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant["challenge"]:
                        return jsonify(error="invalid_grant", error_description="PKCE"), 400
                return jsonify(provider._issue(grant["claims"], grant["nonce"], grant["scope"], with_id_token=True))
            if form.get("grant_type") == "refresh_token":
                if provider.fault == "refuse_refresh":
                    return jsonify(error="invalid_grant"), 400
                grant = provider.refresh_tokens.pop(form.get("refresh_token", ""), None)
                if grant is None:
                    return jsonify(error="invalid_grant"), 400
                provider.refreshes += 1
                return jsonify(provider._issue(grant["claims"], None, grant["scope"], with_id_token=False))
            return jsonify(error="unsupported_grant_type"), 400

        @app.get("/userinfo")
        def userinfo():
            access = request.headers.get("Authorization", "").removeprefix("Bearer ")
            grant = provider.tokens.get(access)
            if grant is None:
                return jsonify(error="invalid_token"), 401
            if provider.userinfo is not None:
                return jsonify(provider.userinfo)
            return jsonify(grant["claims"])

        return app

    def _client_authenticated(self) -> bool:
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        else:
            client_id, secret = request.form.get("client_id"), request.form.get("client_secret")
        return client_id == self.client_id and secret == self.client_secret

    def _issue(self, claims: dict, nonce: str | None, scope: str, with_id_token: bool) -> dict:
        access = secrets.token_urlsafe(24)
        self.tokens[access] = {"claims": claims}
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in}
        answer["scope"] = self.granted_scope if self.granted_scope is not None else scope
        if self.issue_refresh_token:
            refresh = secrets.token_urlsafe(24)
            self.refresh_tokens[refresh] = {"claims": claims, "scope": scope}
            answer["refresh_token"] = refresh
        if self.kind == "oidc" and with_id_token:
            answer["id_token"] = self.id_token(claims, nonce)
        return answer

    def id_token(self, claims: dict, nonce: str | None) -> str:
        now = int(time.time())
        payload = {"iss": self.url, "aud": self.client_id, "iat": now, "exp": now + 300, "nonce": nonce, **claims}
        if self.fault == "wrong_aud":
            payload["aud"] = "someone-else"
        if self.fault == "wrong_nonce":
            payload["nonce"] = "not-the-nonce"
        if self.fault == "wrong_iss":
            payload["iss"] = "https://impostor.example"
        if self.fault == "expired":
            payload["iat"], payload["exp"] = now - 3600, now - 600
        payload.update(self.id_token_overrides)
        if self.fault == "bad_signature":
            return jwt.encode({"alg": "RS256", "kid": "test-key"}, payload, _OTHER_KEY)
        header = {"alg": "RS256"} if self.omit_kid else {"alg": "RS256", "kid": self.key.kid}
        return jwt.encode(header, payload, self.key)


def _trickle():
    """A byte every 0.2 s for 6 s: each within any read timeout, the whole far past a deadline."""
    for _ in range(30):
        yield b" "
        time.sleep(0.2)
