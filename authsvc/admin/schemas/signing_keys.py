"""A domain's signing keys: rotating to a new one."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from authsvc.admin.schemas.base import Schema
from authsvc.oauth import keys


class SigningKeyRotation(Schema):
    """The new key's algorithm; the old key stays published until the tokens it signed expire."""

    alg: Literal[*keys.ALGORITHMS] = Field(default=keys.DEFAULT_ALGORITHM, description="Default RS256.")
