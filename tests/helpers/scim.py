"""SCIM test helpers: a domain admin's `scim` key, scim2-client over WSGI, raw requests in SCIM's media type."""

from __future__ import annotations

import json

import pytest
from scim2_client.engines.wsgi import WSGISCIMClient
from scim2_models import Group, ScimProvider, User

from tests.helpers import HOST, headers

SCIM = "/scim/v2"
MEDIA_TYPE = "application/scim+json"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


class Scim:
    """The test's SCIM client: ``key`` is a domain admin's API key with the `scim` scope."""

    def __init__(self, app, client, key: str):
        self.app = app
        self.client = client
        self.key = key

    def headers(self, key: str | None = None, **extra) -> dict:
        return headers(Authorization=f"Bearer {key or self.key}", **extra)

    def send(self, method: str, path: str, body=None, key: str | None = None, query_string=None, **extra):
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        return self.client.open(
            SCIM + path,
            method=method,
            data=data,
            query_string=query_string,
            content_type=MEDIA_TYPE if data is not None else None,
            headers=self.headers(key, **extra),
        )

    def get(self, path: str, **kwargs):
        return self.send("GET", path, **kwargs)

    def post(self, path: str, body, **kwargs):
        return self.send("POST", path, body, **kwargs)

    def put(self, path: str, body, **kwargs):
        return self.send("PUT", path, body, **kwargs)

    def patch(self, path: str, operations: list, **kwargs):
        return self.send("PATCH", path, {"schemas": [PATCH_SCHEMA], "Operations": operations}, **kwargs)

    def delete(self, path: str, **kwargs):
        return self.send("DELETE", path, **kwargs)

    def create_user(self, user_name: str = "ada@example.com", **fields) -> dict:
        body = {"schemas": [USER_SCHEMA], "userName": user_name, **fields}
        response = self.post("/Users", body)
        assert response.status_code == 201, response.get_json()
        return response.get_json()

    def scim2_client(self) -> WSGISCIMClient:
        """scim2-client calling the app in process, with the key; discovered from the server's own endpoints."""
        client = WSGISCIMClient(
            self.app,
            base_url=f"https://{HOST}{SCIM}",
            headers={"Authorization": f"Bearer {self.key}"},
            provider=ScimProvider(models=[User, Group]),
        )
        client.discover()
        return client


def assert_scim_error(response, status: int, scim_type: str | None = None) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == MEDIA_TYPE
    body = response.get_json()
    assert body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert body["status"] == str(status)
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body
    return body


@pytest.fixture
def scim(app, client, setup, world):
    """A domain admin of the test domain with an API key holding the reserved `scim` scope."""
    admin = world.user(setup.domain, "it-admin@example.com", admin=True, name="IT admin")
    key = world.api_key(admin, scopes="scim")
    helper = Scim(app, client, key)
    helper.admin = admin
    return helper
