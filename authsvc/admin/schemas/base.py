"""The base of every admin input schema, and reading a request body with one.

The admin API's rules for a JSON body, kept from before the schemas:

- strict types (``"1"`` is no number, ``1`` no boolean), strings trimmed;
- a member that is ``null`` counts as missing, except where the field may be
  null: on a change, that null resets an optional setting to its default;
- members the schema does not name are ignored;
- every problem the schema finds is reported at once, as ``{field: message}``
  (a 422); the rules that need the database or the actor follow in the
  service functions.
"""

from __future__ import annotations

import re
import types
from functools import cache
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import ErrorDetails

from authsvc.admin.actors import Actor, require_change
from authsvc.admin.schemas.types import DomainId
from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.errors import ValidationFailed
from authsvc.core.models import Domain


class Schema(BaseModel):
    """An admin input: strict, trimmed, unknown members ignored, null as missing where null is no value."""

    # defer_build: a worker builds a schema's validator on its first use, not at start (memory).
    model_config = ConfigDict(strict=True, extra="ignore", str_strip_whitespace=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_missing(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        nullable = _nullable_fields(cls)
        return {name: value for name, value in data.items() if value is not None or name in nullable}

    def given(self) -> dict[str, Any]:
        """The fields the body gave, with their values (None: reset to the default).

        A change by field name, as the service functions apply it to the record (``save_change``);
        what each field holds is the schema's to say, read from the model where a rule needs it.
        """
        return self.model_dump(exclude_unset=True)


@cache
def _nullable_fields(schema: type[Schema]) -> frozenset[str]:
    return frozenset(name for name, field in schema.model_fields.items() if _admits_none(field.annotation))


def _admits_none(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)


S = TypeVar("S", bound=Schema)


def read(schema: type[S], data: Any, **context: Any) -> S:
    """``data`` (a parsed JSON body) as ``schema``; ValidationFailed with a message per field.

    ``context`` reaches the schema's validators: ``domain`` for the rules that
    depend on the target domain (its scopes).
    """
    try:
        return schema.model_validate(data, context=context)
    except ValidationError as exc:
        problems: dict[str, str] = {}
        for error in exc.errors(include_url=False):
            field = str(error["loc"][0]) if error["loc"] else "body"
            problems.setdefault(field, _message(error))
        raise ValidationFailed(problems) from None


# Pydantic's error types, in the words the admin API has always used.
MESSAGES = {
    "missing": "is required",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "bool_type": "must be true or false",
    "int_type": "must be a whole number",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
}


def _message(error: ErrorDetails) -> str:
    kind, ctx, loc = error["type"], error.get("ctx") or {}, error["loc"]
    if len(loc) > 1 and kind in ("string_type", "string_too_short", "string_too_long"):
        return "must be a list of strings"  # an item of a list of strings
    if kind == "list_type":
        return "must be a list of strings"
    if kind == "too_short":
        return "must not be empty"
    if kind == "string_too_short" and ctx.get("min_length", 1) > 1:
        return f"must be at least {ctx['min_length']} characters"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters, without NUL"
    if kind == "literal_error":
        return "must be one of " + ", ".join(re.findall(r"'([^']*)'", str(ctx["expected"])))
    if kind == "value_error":
        return str(ctx["error"])  # a rule's own words (validation.Invalid)
    return MESSAGES.get(kind, error["msg"])


class DomainRef(Schema):
    domain: DomainId | None = None


def target_domain(actor: Actor, data: Any) -> Domain:
    """The domain a new record goes to: the body's ``domain`` (an id), or the actor's own; it must be changeable."""
    given = read(DomainRef, data).domain
    domain_id = validation.record_id(given) if given else actor.domain_id
    domain = db.session.get(Domain, domain_id) if domain_id is not None else None
    if domain is None or not actor.can_read(domain.id):
        raise ValidationFailed({"domain": "no such domain"})
    require_change(actor, domain.id)
    return domain
