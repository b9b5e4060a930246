"""The code exchange of an OpenID Connect application, and an ID token checked against the domain's published keys."""

from __future__ import annotations

from joserfc import jwt
from joserfc.jwk import KeySet

from tests.helpers import REDIRECT_URI, headers


def exchange(client, app, secret, code):
    return client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        headers=headers(),
        auth=(app.client_id, secret),
    )


def refresh(client, app, secret, refresh_token):
    return client.post(
        "/auth/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token},
        headers=headers(),
        auth=(app.client_id, secret),
    )


def verify(client, id_token):
    """The ID token's header and claims, its signature checked against the domain's published JWKS."""
    jwks = KeySet.import_key_set(client.get("/auth/oauth/jwks", headers=headers()).get_json())
    token = jwt.decode(id_token, jwks, algorithms=["RS256", "ES256"])
    return token.header, token.claims
