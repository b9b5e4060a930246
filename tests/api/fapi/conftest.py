"""Fixtures of the FAPI 2.0 profile tests: a ``fapi2`` domain and its applications."""

from __future__ import annotations

from tests.helpers import fapi as fapi_helpers

fapi = fapi_helpers.fapi
