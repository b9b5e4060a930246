"""Fixtures of the sign-in tests: a person enrolled in MFA."""

from __future__ import annotations

from tests.helpers import mfa

enrolled = mfa.enrolled
