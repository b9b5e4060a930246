"""The service's own API takes only tokens meant for it (RFC 8707, RFC 9068 4): a token issued for another
resource is that resource's, and /api/engine/v2 answers it 401 ``invalid_token`` naming its RFC 9728 metadata.
Inspect and introspection still describe any token of the domain: they answer for resource servers."""

from __future__ import annotations

import pytest

from tests.helpers import HOST, headers

MCP = "https://other.example/mcp"
API = f"https://{HOST}/api/engine/v2"
METADATA = f"https://{HOST}/.well-known/oauth-protected-resource/api/engine/v2"


@pytest.fixture
def admin_app(world):
    """A confidential application acting as an admin service account, whose tokens may be for the MCP server,
    the API or the service's origin."""
    domain = world.domain(scopes="public admin")
    service = world.user(domain, "robot@example.com", service_account=True, admin=True)
    app, secret = world.application(
        domain,
        confidential=True,
        scopes="public admin",
        service_account_id=service.id,
        redirect_uris=[],
        resources=[MCP, API, f"https://{HOST}"],
    )
    return app.client_id, secret


def token_for(client, auth, *resources: str) -> str:
    data = {"grant_type": "client_credentials", "scope": "public admin", "resource": list(resources)}
    answer = client.post("/auth/oauth/token", data=data, headers=headers(), auth=auth)
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()["access_token"]


def admin_api(client, token: str):
    return client.get("/api/engine/v2/domains", headers=headers(Authorization=f"Bearer {token}"))


def test_a_token_for_another_resource_is_refused_by_the_api(client, admin_app):
    """A token an MCP server received could otherwise be replayed at this API with the user's rights."""
    answer = admin_api(client, token_for(client, admin_app, MCP))
    assert answer.status_code == 401
    assert answer.get_json()["error"] == "invalid_token"
    challenge = answer.headers["WWW-Authenticate"]
    assert 'error="invalid_token"' in challenge and f'resource_metadata="{METADATA}"' in challenge


@pytest.mark.parametrize(
    "resources",
    [(), (API,), (f"https://{HOST}",), (MCP, API)],
    ids=["no resource", "the api", "the origin", "among others"],
)
def test_a_token_for_this_service_or_for_no_resource_is_accepted(client, admin_app, resources):
    answer = admin_api(client, token_for(client, admin_app, *resources))
    assert answer.status_code == 200, answer.get_json()


def test_the_users_own_api_refuses_it_too(client, admin_app):
    bearer = headers(Authorization=f"Bearer {token_for(client, admin_app, MCP)}")
    answer = client.get("/api/engine/v2/me", headers=bearer)
    assert answer.status_code == 401 and answer.get_json()["error"] == "invalid_token"


def test_inspect_and_introspection_still_describe_it(client, admin_app):
    token = token_for(client, admin_app, MCP)
    inspected = client.get("/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token}"))
    assert inspected.status_code == 200 and inspected.get_json()["aud"] == MCP
    introspected = client.post("/auth/oauth/introspect", data={"token": token}, headers=headers(), auth=admin_app)
    assert introspected.get_json()["active"] is True and introspected.get_json()["aud"] == MCP
