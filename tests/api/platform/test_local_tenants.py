"""A second tenant on this machine: every ``*.localhost`` name is loopback (RFC 6761 6.3).

OAuth 2.0 needs TLS except on loopback (RFC 6749 3.1, RFC 8252 7.3); a domain at
``acme.localhost`` is reached over plain http as ``localhost`` is, with its own issuer.
"""

from __future__ import annotations

import pytest

from authsvc import admin
from authsvc.core.database import db
from tests.helpers import PASSWORD, location_params, pkce_pair

ACME = "acme.localhost"
CALLBACK = "http://acme.localhost:8080/callback"


@pytest.fixture
def acme(app, world):
    """Acme's domain, application and person, as ``flask --app app domains create`` and friends make them."""
    with app.app_context():
        actor = admin.command_line()
        domain = admin.create_domain(actor, {"name": "Acme", "host": ACME})
        application, _ = admin.create_application(
            actor, {"domain": str(domain.id), "name": "Acme app", "redirect_uris": [CALLBACK], "scopes": "public"}
        )
        admin.create_user(actor, {"domain": str(domain.id), "email": "ada@acme.localhost", "password": PASSWORD})
        db.session.commit()
        return application.client_id


def test_a_localhost_subdomain_runs_the_code_flow_over_plain_http_with_its_own_issuer(app, acme):
    client = app.test_client()
    base = f"http://{ACME}:5000"
    signed_in = client.post(f"{base}/auth/signin", query_string={"email": "ada@acme.localhost", "password": PASSWORD})
    assert signed_in.status_code == 202, signed_in.get_json()
    verifier, challenge = pkce_pair()
    authorised = client.get(
        f"{base}/auth/oauth/authorize",
        query_string={
            "response_type": "code",
            "client_id": acme,
            "redirect_uri": CALLBACK,
            "scope": "public",
            "state": "xyz",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        },
    )
    assert authorised.status_code == 302, authorised.get_data(as_text=True)
    assert authorised.headers["Location"].startswith(CALLBACK + "?")
    token = client.post(
        f"{base}/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": location_params(authorised)["code"],
            "code_verifier": verifier,
            "client_id": acme,
            "redirect_uri": CALLBACK,
        },
    )
    assert token.status_code == 200, token.get_json()
    claims = client.get(
        f"{base}/api/engine/v2/api_keys/inspect",
        headers={"Authorization": f"Bearer {token.get_json()['access_token']}"},
    ).get_json()
    assert (claims["iss"], claims["aud"]) == (base, ACME)
    metadata = client.get(f"{base}/.well-known/oauth-authorization-server").get_json()
    assert metadata["issuer"] == base


@pytest.mark.parametrize("host", ["acme.localhost.example.com", "localhost.example.com", "example.com"])
def test_plain_http_to_a_name_that_only_looks_local_is_insecure_transport(app, world, host):
    domain = world.domain(host=host)
    application, _ = world.application(domain)
    refused = app.test_client().post(
        f"http://{host}/auth/oauth/token",
        data={
            "grant_type": "password",
            "username": "x@example.com",
            "password": "x",
            "client_id": application.client_id,
        },
    )
    assert refused.status_code == 400
    assert refused.get_json()["error"] == "insecure_transport"
