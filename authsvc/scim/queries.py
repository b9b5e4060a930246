"""SCIM list requests: ``filter`` as SQL, ``sortBy``, ``startIndex`` and ``count`` (RFC 7644 3.4.2).

A filter is parsed and checked by scim2-models (a bad one is 400 ``invalidFilter``),
then translated into a SQL condition for the attributes we keep in columns
(``userName``, ``externalId``, ``id``, ``active``, ``displayName``, ``emails.value``,
``meta.created``, ``meta.lastModified``, a group's ``members.value``). ``userName eq``
is then a lookup on the (domain, e-mail) unique index. A filter on anything else
(``title``, ``name.givenName``, ...) is evaluated by scim2-models on each of the
domain's resources instead: right, but not for domains of a hundred thousand users.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from pydantic import ValidationError
from scim2_models import Context, Error, InvalidFilterException, Resource, SCIMException, SearchRequest
from scim2_models.path import (
    AttrPath,
    CompareOperator,
    Comparison,
    FilterVisitor,
    LogicalExpr,
    LogicalOperator,
    Not,
    Present,
    ValuePath,
)
from sqlalchemy import ColumnElement, and_, false, not_, or_, true

from authsvc.core import validation
from authsvc.scim import protocol

# Items per page when the client does not say, and the most it may ask for (RFC 7644 3.4.2.4).
# A SCIM resource of one kind (a User, a Group), kept as that kind through a filter.
R = TypeVar("R", bound=Resource[Any])

DEFAULT_COUNT = 100
MAX_COUNT = 1000


class Untranslatable(Exception):
    """The filter names something that is not a column: evaluate it on the resources instead."""


@dataclass(frozen=True)
class Column:
    """How a SCIM attribute reads in SQL: ``kind`` is text (case-insensitive, lower-cased already),
    exact (case-exact text), id, flag, ms or seconds (timestamps), or custom (``build(op, value)``)."""

    expression: Any
    kind: str
    build: Callable[[CompareOperator, Any], ColumnElement[bool]] | None = None


def search_request(model: type, args: dict[str, str]) -> SearchRequest:
    """The query parameters checked against ``model``: 400 ``invalidFilter`` / ``invalidValue`` if bad."""
    params: dict[str, Any] = {
        key: args[key]
        for key in ("filter", "sortBy", "sortOrder", "startIndex", "count", "attributes", "excludedAttributes")
        if args.get(key) not in (None, "")
    }
    for key in ("startIndex", "count"):
        if key in params:
            try:
                params[key] = int(params[key])
            except ValueError:
                raise InvalidFilterException(detail=f"{key} must be an integer.") from None
    if "sortOrder" in params:
        params["sortOrder"] = params["sortOrder"].lower()
    return SearchRequest[model].model_validate(params)  # type: ignore[valid-type]


def page(request: SearchRequest) -> tuple[int, int]:
    """(offset, limit) of the page asked for: startIndex below 1 is 1, count below 0 is 0 (RFC 7644 3.4.2.4).

    A startIndex past any row a table can number is past the last one: an empty page, not a number
    the database refuses.
    """
    start = min(max(1, request.start_index or 1), validation.MAX_INTEGER + 1)
    count = DEFAULT_COUNT if request.count is None else min(max(0, request.count), MAX_COUNT)
    return start - 1, count


def _timestamp(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InvalidFilterException(detail=f"{value!r} is not a dateTime.") from None


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class SqlFilter(FilterVisitor[ColumnElement[bool]]):
    """Translate a parsed filter into a SQL condition over ``columns`` (keyed by lower-cased attribute path)."""

    def __init__(self, columns: dict[str, Column]):
        self.columns = columns

    def _column(self, path: AttrPath) -> Column:
        name = path.attr.lower() + (f".{path.sub_attr.lower()}" if path.sub_attr else "")
        column = self.columns.get(name)
        if column is None:
            raise Untranslatable(name)
        return column

    def visit_comparison(self, node: Comparison) -> ColumnElement[bool]:
        if isinstance(node.value, str) and not validation.storable_text(node.value):
            # The filter's own escapes ("\u0000", "\ud800") make text no stored value can hold.
            raise InvalidFilterException(detail="A filter value holds NUL or a lone surrogate.")
        column = self._column(node.attr_path)
        op, value, expression = node.op, node.value, column.expression
        if column.build is not None:
            return column.build(op, value)
        if column.kind == "flag":
            if op not in (CompareOperator.eq, CompareOperator.ne) or not isinstance(value, bool):
                raise Untranslatable(op)
            return expression.is_(value) if op == CompareOperator.eq else expression.is_(not value)
        if column.kind == "id":
            return _id_matches(expression, op, value)
        if column.kind in ("ms", "seconds"):
            number = int(_timestamp(value) * (1000 if column.kind == "ms" else 1))
            return _ordered(expression, op, number)
        return _text_matches(expression, op, value, column.kind)

    def visit_present(self, node: Present) -> ColumnElement[bool]:
        column = self._column(node.attr_path)
        if column.build is not None:
            return column.build(CompareOperator.ne, None)
        if column.kind in ("flag", "id"):
            return true()
        if column.kind in ("text", "exact"):
            return and_(column.expression.is_not(None), column.expression != "")
        return column.expression.is_not(None)

    def visit_not(self, node: Not) -> ColumnElement[bool]:
        return not_(self.visit(node.expr))

    def visit_logical_expr(self, node: LogicalExpr) -> ColumnElement[bool]:
        terms = [self.visit(term) for term in node.terms]
        return and_(*terms) if node.op == LogicalOperator.and_ else or_(*terms)

    def visit_value_path(self, node: ValuePath) -> ColumnElement[bool]:
        raise Untranslatable(str(node))


def _id_matches(expression: Any, op: CompareOperator, value: Any) -> ColumnElement[bool]:
    if op not in (CompareOperator.eq, CompareOperator.ne):
        raise Untranslatable(op)
    number = validation.record_id(str(value))  # None: past the column's integers, or no number
    matches = expression == number if number is not None else false()
    return matches if op == CompareOperator.eq else not_(matches)


def _text_matches(expression: Any, op: CompareOperator, value: Any, kind: str) -> ColumnElement[bool]:
    if not isinstance(value, str):
        raise Untranslatable(value)
    if kind == "text":
        value = value.lower()
    if op == CompareOperator.co:
        return expression.like(f"%{_escape_like(value)}%", escape="\\")
    if op == CompareOperator.sw:
        return expression.like(f"{_escape_like(value)}%", escape="\\")
    if op == CompareOperator.ew:
        return expression.like(f"%{_escape_like(value)}", escape="\\")
    return _ordered(expression, op, value)


def _ordered(expression: Any, op: CompareOperator, value: Any) -> ColumnElement[bool]:
    if op == CompareOperator.eq:
        return expression == value
    if op == CompareOperator.ne:
        return or_(expression != value, expression.is_(None))
    if op == CompareOperator.gt:
        return expression > value
    if op == CompareOperator.ge:
        return expression >= value
    if op == CompareOperator.lt:
        return expression < value
    return expression <= value


def condition(request: SearchRequest, columns: dict[str, Column]) -> ColumnElement[bool] | None:
    """The SQL condition of the request's filter (true without one), or None when it must be evaluated in Python."""
    if request.filter is None:
        return true()
    try:
        return SqlFilter(columns).visit(request.filter.ast)
    except Untranslatable:
        return None


def matching(request: SearchRequest, resources: list[R]) -> list[R]:
    """The ``resources`` the request's filter keeps, evaluated in Python (where ``condition`` gave None)."""
    scim_filter = request.filter
    return resources if scim_filter is None else [resource for resource in resources if scim_filter.match(resource)]


def validation_failure(exc: ValidationError) -> SCIMException:
    """A pydantic failure of a SCIM payload or query, as the SCIM exception it stands for."""
    errors = Error.from_validation_errors(exc)
    found = errors[0] if errors else Error(status=400, scim_type="invalidValue", detail="The request is invalid.")
    return SCIMException.from_error(found)


def validated(model: Any, payload: Any, ctx: Any) -> Any:
    """``payload`` as the SCIM ``model`` in the context ``ctx`` (RFC 7643), or the SCIM error it stands for."""
    try:
        return model.model_validate(payload, scim_ctx=ctx, scim_policy=protocol.POLICY)
    except ValidationError as exc:
        raise validation_failure(exc) from None


def patched(patch_op: Any, current: Any, payload: Any) -> Any:
    """``current`` with the ``payload`` of a ``patch_op`` (``PatchOp[Model]``) applied (RFC 7644 3.5.2),
    under the service's policy."""
    operations = validated(patch_op, protocol.without_null_members(payload), Context.RESOURCE_PATCH_REQUEST)
    with protocol.POLICY:
        operations.patch(current)
    return current
