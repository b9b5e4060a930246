"""Single sign-on for the tests: loopback providers (tests/fakes/providers.py) registered as an operator does, the
browser's round trip through them, and the admin API's calls.

Used by tests/api/sso/test_sso.py, tests/api/sso/test_sso_linking.py, tests/api/sso/test_sso_resource_tokens.py,
tests/api/sso/test_sso_providers.py and tests/api/sso/test_sso_microsoft.py, through tests/api/sso/conftest.py,
which offers the fixtures defined here.
In those modules ``oidc`` is the loopback OpenID provider below, not conftest's OIDC domain.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
import requests

from tests.fakes.providers import Provider
from tests.helpers import HOST, headers

# Whom the OpenID provider signs in unless a test says otherwise.
PERSON = {"sub": "ext-42", "email": "ada@example.com", "email_verified": True, "name": "Ada Lovelace"}
API = "/api/engine/v2"


@pytest.fixture
def oidc():
    """An OpenID provider on loopback, signing in ``PERSON``."""
    with Provider("oidc") as provider:
        provider.sign_in_as(**PERSON)
        yield provider


@pytest.fixture
def oauth2():
    """A plain OAuth 2.0 provider on loopback, with a userinfo URL."""
    with Provider("oauth2") as provider:
        provider.sign_in_as(id="u-7", email="grace@example.com", name="Grace Hopper")
        yield provider


def create_provider(runner, *args, on_premises: bool = True) -> dict:
    """``sso create`` as an operator does; the loopback provider needs --allow-private-network."""
    private = ["--allow-private-network"] if on_premises else []
    result = runner.invoke(
        args=[
            "sso",
            "create",
            "--domain",
            HOST,
            "--name",
            "Corp",
            "--client-id",
            "authsvc",
            "--client-secret",
            "provider-secret",
            *private,
            *args,
        ]
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def oidc_id(runner, setup, oidc):
    """The ``oidc`` provider registered for the setup's domain (by its issuer, discovery does the rest)."""
    return create_provider(runner, "--issuer", oidc.url)["id"]


@pytest.fixture
def oauth2_id(runner, setup, oauth2):
    """The ``oauth2`` provider registered for the setup's domain, by its URLs; its ``id`` is the subject."""
    return create_provider(
        runner,
        "--authorize-url",
        oauth2.url + "/authorize",
        "--token-url",
        oauth2.url + "/token",
        "--userinfo-url",
        oauth2.url + "/userinfo",
        "--map",
        "uid=id",
    )["id"]


def sign_in(client, provider_id, continue_url=None, host=HOST):
    """Follow the browser's path: us -> provider -> our callback. Returns (start, callback) responses."""
    query = {"id": provider_id}
    if continue_url:
        query["continue"] = continue_url
    start = client.get("/auth/oauth2", query_string=query, headers=headers(host))
    assert start.status_code == 302, start.get_data(as_text=True)
    at_provider = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(at_provider.headers["Location"])
    callback = client.get(back.path, query_string=back.query, headers=headers(host))
    return start, callback


def api(client, method, path, key, body=None, host=HOST):
    """Call the admin API with an API key."""
    kwargs = {"json": body} if body is not None else {}
    return getattr(client, method)(API + path, headers=headers(host, **{"X-API-Key": key}), **kwargs)


@pytest.fixture
def on_premises_app(make_app, setup):
    """An app whose operator allows every provider on private networks: the loopback provider stands in for a
    public one registered by a domain admin."""
    from tests.helpers import HttpsClient

    app = make_app(AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS=True)
    app.test_client_class = HttpsClient
    return app


@pytest.fixture
def admin_key(world, setup):
    """An API key of a domain admin (not a system admin) of the setup's domain."""
    tenant_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    return world.api_key(tenant_admin, scopes="public admin", permission="admin")
