"""Fixtures of the OAuth 2.0 tests: an application that authenticates with private_key_jwt."""

from __future__ import annotations

from tests.helpers import private_key_jwt

keyed = private_key_jwt.keyed
