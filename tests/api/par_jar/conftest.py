"""Fixtures of the pushed request and request object tests: a confidential application."""

from __future__ import annotations

from tests.helpers import pushed_requests

confidential = pushed_requests.confidential
