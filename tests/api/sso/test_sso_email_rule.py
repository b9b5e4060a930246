"""Single sign-on creates users by the service's one e-mail rule (docs/security.md, "E-mail addresses"):
what a provider sends is an address by it, or no user is made."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import User
from tests.helpers.sso import sign_in


def test_a_directorys_address_makes_a_user(client, world, oidc, oidc_id):
    """Entra ID sends Active Directory UPNs (alice@corp.local) as the e-mail of on-premises accounts."""
    oidc.sign_in_as(sub="ext-1", email="Alice@Corp.Local", email_verified=True)
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 303, callback.headers.get("Location")
    assert [user.email for user in world.query(select(User).where(User.email.like("alice%")))] == ["alice@corp.local"]


@pytest.mark.parametrize("address", ["a..b@example.com", "not an address", "ada@[10.0.0.1]"])
def test_what_is_no_address_by_the_rule_makes_no_user(client, world, oidc, oidc_id, address):
    oidc.sign_in_as(sub="ext-1", email=address, email_verified=True)
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=invalid_email"
    assert world.query(select(User).where(User.email == address.lower())) == []
