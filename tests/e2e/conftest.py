"""Fixtures of the end-to-end tests: panva's openid-client, installed once."""

from __future__ import annotations

from tests.helpers import relying_party

openid_client = relying_party.openid_client
