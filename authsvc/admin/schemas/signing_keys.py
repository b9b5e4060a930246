"""A domain's signing keys: rotating to a new one, and how a key is shown."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from authsvc.admin.schemas.answers import Answer
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import TRIMMED
from authsvc.oauth import keys


class SigningKeyRotation(Schema):
    """The new key's algorithm; the old key stays published until the tokens it signed expire."""

    alg: Annotated[keys.Algorithm, TRIMMED] = Field(default=keys.DEFAULT_ALGORITHM, description="Default RS256.")


# Answers


class SigningKey(Answer):
    kid: str
    alg: keys.Algorithm
    state: Literal["current", "previous", "expired"] = Field(
        description="current signs new tokens; previous is still published (its tokens may not have expired); "
        "expired is no longer published."
    )
    created_at: int
    retire_after: int | None = Field(description="When a rotated-out key leaves the JWKS; null while current.")


class SigningKeyList(Answer):
    keys: list[SigningKey]
