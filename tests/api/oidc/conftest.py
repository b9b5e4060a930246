"""Fixtures of the OpenID Connect tests: a second person of the OIDC domain."""

from __future__ import annotations

from tests.helpers import oidc_authorize

other_person = oidc_authorize.other_person
