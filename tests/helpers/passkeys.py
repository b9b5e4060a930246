"""A passkey authenticator in software, for the tests of passkey sign-in: what a phone or a security
key answers to ``navigator.credentials.create`` and ``.get`` (WebAuthn Level 3, 6.1 and 6.3), built with
``cryptography`` (ES256) and ``cbor2`` ("none" attestation), as the browser then hands it to the page.
py_webauthn verifies answers but makes none. The browser tests use Chromium's virtual authenticator
instead (tests/e2e/test_mfa_browser.py).

Used by tests/api/auth/test_passkey_signin.py.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import struct

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from tests.helpers import HOST, PASSWORD, headers
from tests.helpers.pages import csrf_token

ORIGIN = f"https://{HOST}"
# Authenticator data flags (WebAuthn 6.1): user present, user verified, attested credential data.
UP, UV, AT = 0x01, 0x04, 0x40


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    """One discoverable credential (a passkey): its key pair, id, counter and the user handle it holds."""

    def __init__(self, user_handle: bytes | None = None, credential_id: bytes | None = None) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = credential_id or os.urandom(16)
        self.user_handle = user_handle
        self.sign_count = 0

    def cose_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})

    def _client_data(self, kind: str, challenge: str, origin: str) -> bytes:
        return json.dumps({"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False}).encode()

    def create(self, options: dict, origin: str = ORIGIN) -> dict:
        """The answer to ``navigator.credentials.create`` with the server's ``options`` (JSON)."""
        self.user_handle = unb64url(options["user"]["id"])
        rp_hash = hashlib.sha256(options["rp"]["id"].encode()).digest()
        attested = bytes(16) + struct.pack(">H", len(self.credential_id)) + self.credential_id + self.cose_key()
        auth_data = rp_hash + bytes([UP | UV | AT]) + struct.pack(">I", self.sign_count) + attested
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {
            "id": b64url(self.credential_id),
            "rawId": b64url(self.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(self._client_data("webauthn.create", options["challenge"], origin)),
                "attestationObject": b64url(attestation),
                "transports": ["internal"],
            },
            "clientExtensionResults": {},
        }

    def get(self, options: dict, *, rp_id: str | None = None, origin: str = ORIGIN, verified: bool = True) -> dict:
        """The answer to ``navigator.credentials.get`` with the server's ``options`` (JSON); the counter grows."""
        self.sign_count += 1
        rp_hash = hashlib.sha256((rp_id or options["rpId"]).encode()).digest()
        auth_data = rp_hash + bytes([UP | (UV if verified else 0)]) + struct.pack(">I", self.sign_count)
        client_data = self._client_data("webauthn.get", options["challenge"], origin)
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {
            "id": b64url(self.credential_id),
            "rawId": b64url(self.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                "userHandle": b64url(self.user_handle) if self.user_handle is not None else None,
            },
            "clientExtensionResults": {},
        }


def page_options(page) -> dict:
    """The WebAuthn options a page carries for mfa.js."""
    match = re.search(
        r'<script type="application/json" id="webauthn-options">(.+?)</script>', page.get_data(as_text=True)
    )
    assert match, page.get_data(as_text=True)
    return json.loads(html.unescape(match.group(1)))


def register(
    client, authenticator: Authenticator, email: str = "person@example.com", host: str = HOST, *, signed_in=False
) -> dict:
    """Sign in with the password (unless ``signed_in``) and add ``authenticator``'s passkey on the settings page;
    the options it got. The client is signed out afterwards."""
    if not signed_in:
        answer = client.post("/auth/signin", json={"email": email, "password": PASSWORD}, headers=headers(host))
        assert answer.status_code == 202, answer.get_json()
    page = client.get("/auth/mfa/passkey", headers=headers(host))
    assert page.status_code == 200
    options = page_options(page)
    answer = authenticator.create(options, origin=f"https://{host}")
    form = {"csrf_token": csrf_token(page), "name": "Laptop", "webauthn": json.dumps(answer)}
    added = client.post("/auth/mfa/passkey", data=form, headers=headers(host))
    assert added.status_code == 200, added.get_data(as_text=True)
    client.delete_cookie("user", domain=host)
    return options


def signin_options(client, host: str = HOST) -> dict:
    response = client.get("/auth/signin/passkey", headers=headers(host))
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def signin_with(client, answer: dict, host: str = HOST, **fields):
    return client.post("/auth/signin/passkey", json={"credential": answer, **fields}, headers=headers(host))
