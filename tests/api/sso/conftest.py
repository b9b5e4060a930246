"""Fixtures of the single sign-on tests: here ``oidc`` is the loopback OpenID provider, not the root conftest's
OIDC domain, and an application of an on-premises domain."""

from __future__ import annotations

from tests.helpers import sso

oidc = sso.oidc
on_premises_app = sso.on_premises_app
