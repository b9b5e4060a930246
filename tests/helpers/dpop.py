"""A DPoP client's part (RFC 9449 4): a key pair and the proofs it signs, for the DPoP tests."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any

from joserfc.jwk import ECKey, OKPKey, RSAKey
from joserfc.jws import JWSRegistry

# RFC 9449's own example proof (section 4.1, figure 5 in compact form): ES256, for POST https://server.example.com/token.
RFC9449_PROOF = (
    "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJo"
    "RjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19.ey"
    "JqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0Ij"
    "oxNTYyMjYyNjE2fQ.2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg"
)
# The thumbprint of that proof's key, as RFC 9449 6.1's example cnf states it.
RFC9449_JKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
# RFC 9449 7.1's example access token and its ath.
RFC9449_ACCESS_TOKEN = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
RFC9449_ATH = "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"

# RFC 7638 3.1's example key and its thumbprint.
RFC7638_KEY = {
    "kty": "RSA",
    "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3"
    "oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu"
    "6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJ"
    "zKnqDKgw",
    "e": "AQAB",
    "alg": "RS256",
    "kid": "2011-04-29",
}
RFC7638_THUMBPRINT = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"

TOKEN_URL = "https://auth.example.com/auth/oauth/token"
USERINFO_URL = "https://auth.example.com/auth/oauth/userinfo"
INSPECT_URL = "https://auth.example.com/api/engine/v2/api_keys/inspect"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def access_token_hash(token: str) -> str:
    return b64(hashlib.sha256(token.encode()).digest())


class Holder:
    """A client's DPoP key: ``proof(...)`` signs a proof for one request."""

    def __init__(self, alg: str = "ES256", bits: int = 2048):
        self.alg = alg
        if alg == "ES256":
            self.key = ECKey.generate_key("P-256")
        elif alg in ("RS256", "PS256"):
            self.key = RSAKey.generate_key(bits)
        else:
            self.key = OKPKey.generate_key("Ed25519")
        self.nonce: str | None = None

    @property
    def jwk(self) -> dict[str, Any]:
        return self.key.as_dict(private=False)

    @property
    def jkt(self) -> str:
        return self.key.thumbprint()

    def proof(
        self,
        url: str = TOKEN_URL,
        method: str = "POST",
        *,
        access_token: str | None = None,
        nonce: str | None = "remembered",
        header: dict[str, Any] | None = None,
        claims: dict[str, Any] | None = None,
        drop: tuple[str, ...] = (),
    ) -> str:
        """A proof for ``method`` ``url``; ``nonce`` "remembered": the last DPoP-Nonce this holder saw."""
        protected = {"typ": "dpop+jwt", "alg": self.alg, "jwk": self.jwk, **(header or {})}
        payload: dict[str, Any] = {"jti": secrets.token_urlsafe(16), "htm": method, "htu": url, "iat": int(time.time())}
        nonce = self.nonce if nonce == "remembered" else nonce
        if nonce:
            payload["nonce"] = nonce
        if access_token is not None:
            payload["ath"] = access_token_hash(access_token)
        payload.update(claims or {})
        for name in drop:
            payload.pop(name, None)
        # Signed by hand (JWS compact, RFC 7515 7.1): any header at all, including what the service must refuse.
        signing_input = f"{b64(json.dumps(protected).encode())}.{b64(json.dumps(payload).encode())}"
        signature = JWSRegistry.algorithms[self.alg].sign(signing_input.encode(), self.key)
        return f"{signing_input}.{b64(signature)}"

    def remember(self, response: Any) -> Any:
        """Keep the DPoP-Nonce the service gave, as a client does."""
        if response.headers.get("DPoP-Nonce"):
            self.nonce = response.headers["DPoP-Nonce"]
        return response
