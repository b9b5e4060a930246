"""The admin API for the tests: its base path, an API key of each kind of caller, and a call with one.

Used by the tests/api/admin/test_admin_api*.py modules and others that call the admin API.
"""

from __future__ import annotations

import pytest

from tests.helpers import HOST, OTHER_HOST, headers

API = "/api/engine/v2"
ADMIN_SCOPES = "public admin"


@pytest.fixture
def keys(world, setup):
    """API keys of an admin, a support user, a plain user, and a system admin of another domain."""
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    support = world.user(setup.domain, "support@example.com", support=True)
    other = world.domain(OTHER_HOST)
    root = world.user(other, "root@example.com", admin=True, system_admin=True)

    class Keys:
        admin_user = admin
        admin_key = world.api_key(admin, scopes=ADMIN_SCOPES, permission="admin")
        support_key = world.api_key(support, scopes=ADMIN_SCOPES, permission="support")
        user_key = world.api_key(setup.person)
        system_key = world.api_key(root, scopes=ADMIN_SCOPES, permission="admin")
        other_domain = other

    return Keys


def call(client, method, path, key, json=None, host=HOST, **kwargs):
    return getattr(client, method)(API + path, json=json, headers=headers(host, **{"X-API-Key": key}), **kwargs)


def system_admin_key(world, domain, email="root@example.com") -> str:
    """An API key of a new system admin of ``domain``, with the admin scope: what readyz shows its servers to."""
    root = world.user(domain, email, admin=True, system_admin=True)
    return world.api_key(root, scopes="admin", permission="admin")
