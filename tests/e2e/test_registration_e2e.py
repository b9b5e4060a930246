"""Dynamic client registration against the real service (the Procfile's web line under gunicorn).

Authlib ships no registration client, so the client registers with ``requests`` from the metadata
document's ``registration_endpoint``, then runs the code flow with PKCE through Authlib's
``OAuth2Session`` as the registered client, and manages its registration (RFC 7592).
"""

from __future__ import annotations

import re
import secrets

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session

from tests.helpers.servers import running_service

PASSWORD = "a person's password"
REDIRECT_URI = "http://127.0.0.1:9/callback"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    with running_service(tmp_path_factory.mktemp("instance")) as svc:
        svc.cli("domains", "create", "--name", "Registration", "--host", "127.0.0.1")
        svc.cli("users", "create", "--domain", "127.0.0.1", "--email", "person@example.com", "--password", PASSWORD)
        svc.initial = svc.cli("registration-tokens", "create", "--domain", "127.0.0.1", "--uses", "3")
        yield svc


def registration_endpoint(service) -> str:
    metadata = requests.get(service.url + "/.well-known/oauth-authorization-server", timeout=10).json()
    return metadata["registration_endpoint"]


def register(service, **metadata) -> dict:
    response = requests.post(
        registration_endpoint(service),
        json={
            "client_name": "Partner app",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "scope": "public mqtt.read",
            **metadata,
        },
        headers={"Authorization": f"Bearer {service.initial['token']}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return response.json()


def approve_in_a_browserless_session(service, url: str) -> str:
    """Sign in, open the authorisation URL, approve on the consent page; return the redirect's Location."""
    browser = requests.Session()
    signed_in = browser.post(
        service.url + "/auth/signin", params={"email": "person@example.com", "password": PASSWORD}, timeout=10
    )
    assert signed_in.status_code == 202
    page = browser.get(url, allow_redirects=False, timeout=10)
    assert page.status_code == 200 and "Partner app" in page.text  # registered clients ask for consent
    action = re.search(r'<form method="post" action="([^"]+)"', page.text).group(1).replace("&amp;", "&")
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page.text).group(1)
    answer = browser.post(
        service.url + action, data={"csrf_token": token, "approve": "1"}, allow_redirects=False, timeout=10
    )
    assert answer.status_code == 302, answer.text
    return answer.headers["Location"]


def inspect(service, access_token: str) -> requests.Response:
    return requests.get(
        service.url + "/api/engine/v2/api_keys/inspect", headers={"Authorization": f"Bearer {access_token}"}, timeout=10
    )


def test_a_registered_client_runs_the_code_flow_with_pkce(service):
    registered = register(service)
    assert registered["token_endpoint_auth_method"] == "client_secret_basic"
    client = OAuth2Session(
        client_id=registered["client_id"],
        client_secret=registered["client_secret"],
        redirect_uri=REDIRECT_URI,
        scope="public mqtt.read",
        code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_basic",
    )
    verifier = secrets.token_urlsafe(48)
    url, state = client.create_authorization_url(service.url + "/auth/oauth/authorize", code_verifier=verifier)
    location = approve_in_a_browserless_session(service, url)
    token = client.fetch_token(
        service.url + "/auth/oauth/token", authorization_response=location, code_verifier=verifier, state=state
    )
    assert token["scope"] == "public mqtt.read"
    claims = inspect(service, token["access_token"]).json()
    assert claims["client_id"] == registered["client_id"]
    assert claims["u"]["e"] == "person@example.com"
    refreshed = client.refresh_token(service.url + "/auth/oauth/token")
    assert inspect(service, refreshed["access_token"]).status_code == 200


def test_a_registered_client_reads_updates_and_deletes_its_registration(service):
    registered = register(service, token_endpoint_auth_method="none")
    uri = registered["registration_client_uri"]
    assert uri == f"{service.url}/auth/oauth/register/{registered['client_id']}"
    auth = {"Authorization": f"Bearer {registered['registration_access_token']}"}

    read = requests.get(uri, headers=auth, timeout=10)
    assert read.status_code == 200 and read.json()["redirect_uris"] == [REDIRECT_URI]

    update = {
        "client_id": registered["client_id"],
        "client_name": "Partner app v2",
        "redirect_uris": [REDIRECT_URI, "http://127.0.0.1:9/other"],
        "token_endpoint_auth_method": "none",
    }
    updated = requests.put(uri, json=update, headers=auth, timeout=10)
    assert updated.status_code == 200, updated.text
    assert updated.json()["client_name"] == "Partner app v2"
    assert updated.json()["grant_types"] == ["authorization_code"]  # left out: back to the default

    assert requests.get(uri, headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
    assert requests.delete(uri, headers=auth, timeout=10).status_code == 204
    assert requests.get(uri, headers=auth, timeout=10).status_code == 401
    # The client is gone: the token endpoint no longer knows it.
    gone = requests.post(
        service.url + "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": "x", "client_id": registered["client_id"]},
        timeout=10,
    )
    assert gone.status_code in (400, 401) and gone.json()["error"] == "invalid_client"


def test_a_single_use_token_registers_once_when_raced_across_workers(service):
    from concurrent.futures import ThreadPoolExecutor

    once = service.cli("registration-tokens", "create", "--domain", "127.0.0.1")

    def attempt(_: int) -> int:
        return requests.post(
            registration_endpoint(service),
            json={"redirect_uris": [REDIRECT_URI]},
            headers={"Authorization": f"Bearer {once['token']}"},
            timeout=30,
        ).status_code

    with ThreadPoolExecutor(8) as pool:
        answers = sorted(pool.map(attempt, range(8)))
    assert answers == [201] + [401] * 7
