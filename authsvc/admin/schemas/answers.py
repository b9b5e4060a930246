"""What every admin answer shares: pages of records, deletions, the audit log, and the 422 body.

Answer models describe the JSON the admin API sends (``as_json`` of the
records); they are the OpenAPI document's answer schemas, and the tests check
real answers against that document.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

EPOCH = "Seconds since the epoch."
DECIMAL_ID = "Decimal digits."


class Answer(BaseModel):
    """An answer of the admin API (documentation: the records' ``as_json`` builds it)."""

    # Only the OpenAPI generator reads these: never built in a running service.
    model_config = ConfigDict(defer_build=True)


class Page(Answer):
    """One page of a listing; ``items`` is declared by each resource's page."""

    total: int = Field(description="How many records match, on every page.")
    page: int
    per_page: int


class Deleted(Answer):
    deleted: str = Field(description="The deleted record's id.")


class DeletedApplication(Deleted):
    revoked_tokens: int = Field(description="How many live tokens were revoked.")


class AuditRecord(Answer):
    id: str = Field(description=DECIMAL_ID)
    at: int = Field(description=EPOCH)
    domain: str | None = Field(description="The domain's id; null for a deleted domain.")
    event: str = Field(description="E.g. `application.created`, `user.updated`.")
    actor: str = Field(description="`user:ID`, `api_key:ID`, `client:CLIENT_ID`, `cli` or `anonymous`.")
    target: str | None = Field(description="E.g. `application:7`.")
    ip: str | None
    details: dict[str, Any] = Field(description="The record `before` and `after` the change; never a secret.")


class AuditLog(Page):
    items: list[AuditRecord]


class InvalidInput(Answer):
    """The 422 answer: one message per field (``read`` in authsvc.admin.schemas.base writes them)."""

    error: Literal["invalid_input"]
    error_description: str
    fields: dict[str, str] = Field(
        description="One message per field that is not valid (`body` when the body is not a JSON object)."
    )
