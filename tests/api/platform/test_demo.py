"""The demo that ``./scripts/run`` seeds: every flow of the README works with it as printed.

A person for the code flow (with OpenID Connect's scopes, so an ID token comes back), a service
account for the password grant, and a confidential application for client credentials.
"""

from __future__ import annotations

import json

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from config.settings import INSTANCE_DIR
from tests.helpers import location_params, pkce_pair

BASE = "http://localhost:5000"


@pytest.fixture
def demo(runner):
    (INSTANCE_DIR / "demo.json").unlink(missing_ok=True)
    result = runner.invoke(args=["seed-demo"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_demo_person_signs_in_through_the_code_flow_and_gets_an_id_token(app, demo):
    client = app.test_client()
    signed_in = client.post(f"{BASE}/auth/signin", data={"email": demo["person"], "password": demo["person_password"]})
    assert signed_in.status_code == 202, signed_in.get_json()
    verifier, challenge = pkce_pair()
    authorised = client.get(
        f"{BASE}/auth/oauth/authorize",
        query_string={
            "response_type": "code",
            "client_id": demo["client_id"],
            "redirect_uri": demo["redirect_uri"],
            "scope": "openid profile email",
            "state": "xyz",
            "nonce": "n-1",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        },
    )
    assert authorised.status_code == 302, authorised.get_data(as_text=True)
    tokens = client.post(
        f"{BASE}/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": location_params(authorised)["code"],
            "code_verifier": verifier,
            "client_id": demo["client_id"],
            "redirect_uri": demo["redirect_uri"],
        },
    ).get_json()
    jwks = KeySet.import_key_set(client.get(f"{BASE}/auth/oauth/jwks").get_json())
    claims = jwt.decode(tokens["id_token"], jwks, algorithms=["RS256", "ES256"]).claims
    assert (claims["email"], claims["iss"], claims["nonce"]) == (demo["person"], BASE, "n-1")
    assert set(tokens["scope"].split()) == {"openid", "profile", "email"}


def test_the_service_account_uses_the_password_grant_and_the_person_may_not(app, demo):
    client = app.test_client()

    def password_grant(username: str, password: str):
        return client.post(
            f"{BASE}/auth/oauth/token",
            json={"grant_type": "password", "username": username, "password": password, "client_id": demo["client_id"]},
        )

    assert password_grant(demo["username"], demo["password"]).status_code == 200
    refused = password_grant(demo["person"], demo["person_password"])
    assert (refused.status_code, refused.get_json()["error"]) == (400, "invalid_grant")


def test_the_machine_application_gets_client_credentials_tokens_as_the_service_account(app, demo):
    client = app.test_client()
    token = client.post(
        f"{BASE}/auth/oauth/token",
        data={"grant_type": "client_credentials", "scope": "public"},
        auth=(demo["machine_client_id"], demo["machine_client_secret"]),
    )
    assert token.status_code == 200, token.get_json()
    claims = client.get(
        f"{BASE}/api/engine/v2/api_keys/inspect",
        headers={"Authorization": f"Bearer {token.get_json()['access_token']}"},
    ).get_json()
    assert claims["u"]["e"] == demo["username"]


def test_the_demo_person_is_an_admin_who_may_open_the_console(app, demo):
    client = app.test_client()
    client.post(f"{BASE}/auth/signin", data={"email": demo["person"], "password": demo["person_password"]})
    assert client.get(demo["console_url"]).status_code == 200
    assert demo["signin_url"] == f"{BASE}/auth/login"
    assert client.get(demo["signin_url"]).status_code == 200


def test_the_banner_names_every_credential_of_the_json(runner, demo):
    result = runner.invoke(args=["seed-demo", "--banner"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Demo (embedded defaults")
    labels = [line[2:22].strip() for line in lines[1:]]
    assert labels == ["domain", "sign in", "console", "person", "service account", "application", "machine application"]
    for name in ("person_password", "password", "client_id", "machine_client_secret", "signin_url", "console_url"):
        assert demo[name] in result.stdout, name


def test_a_demo_seeded_before_it_had_a_person_keeps_its_service_account_and_gains_the_rest(runner, world):
    first = runner.invoke(args=["seed-demo"])
    service_password = json.loads(first.stdout)["password"]
    # The file as older releases wrote it: the service account's e-mail and password only.
    (INSTANCE_DIR / "demo.json").write_text(json.dumps({"email": "service@localhost", "password": service_password}))
    again = json.loads(runner.invoke(args=["seed-demo"]).stdout)
    assert (again["username"], again["password"]) == ("service@localhost", service_password)
    assert again["person"] == "demo@localhost"
