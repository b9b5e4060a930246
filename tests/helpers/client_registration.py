"""Dynamic client registration for the tests: the endpoint, its initial access tokens, and calls to it.

Used by tests/api/registration/test_registration.py, tests/api/registration/test_registration_management.py and
tests/api/registration/test_registration_limits.py, which import the fixtures they need from here.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, RegistrationToken
from tests.helpers import HOST, REDIRECT_URI, headers

REGISTER = "/auth/oauth/register"
METADATA = {"redirect_uris": [REDIRECT_URI], "client_name": "Partner app", "scope": "public mqtt.read"}


@pytest.fixture
def domain(world):
    """The domain clients register in."""
    return world.domain()


@pytest.fixture
def issue(world, domain):
    """Issue an initial access token of ``domain`` (or another); returns (row, value)."""

    def issue(on=None, *, expires_in=600, max_uses=1):
        with world.app.app_context():
            token, value = RegistrationToken.issue(
                (on or domain).id, expires_in=expires_in, max_uses=max_uses, created_by="test"
            )
        return world.save(token), value

    return issue


def register(client, token, metadata=None, host=HOST, **kwargs):
    kwargs.setdefault("json", METADATA if metadata is None else metadata)
    return client.post(REGISTER, headers=headers(host, Authorization=f"Bearer {token}"), **kwargs)


def manage(client, method, registered, token=None, **kwargs):
    token = token or registered["registration_access_token"]
    path = f"{REGISTER}/{registered['client_id']}"
    return getattr(client, method)(path, headers=headers(Authorization=f"Bearer {token}"), **kwargs)


def stored(world, client_id) -> Application | None:
    rows = world.query(select(Application).where(Application.client_id == client_id))
    return rows[0] if rows else None


@pytest.fixture
def setup_person(world, client, domain):
    """A person of the domain, signed in in ``client``."""
    from tests.helpers import signin

    world.user(domain, "person@example.com", name="Person")
    signin(client)
