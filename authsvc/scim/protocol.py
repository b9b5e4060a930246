"""What every SCIM answer shares: the media type, the error body, reading a body, ETags, the tolerances."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flask import Response, current_app, request
from scim2_models import (
    Error,
    InvalidSyntaxException,
    InvalidValueException,
    PayloadTooLargeException,
    PreconditionFailedException,
    Resource,
    SCIMException,
    ScimPolicy,
)
from sqlalchemy import update

from authsvc.core import clock, validation
from authsvc.core.database import db, rows_affected
from authsvc.core.headers import uncached
from authsvc.core.settings import settings

MEDIA_TYPE = "application/scim+json"

# What Microsoft Entra ID and Okta send that stretches RFC 7644: attributes we do not
# keep are ignored (RFC 7644 3.5.2: "unrecognized" attributes may be ignored), a
# ``remove`` with a value removes the values listed, and a PATCH filter that matches
# nothing (``emails[type eq "work"].value`` on a user with no work e-mail) adds the entry.
POLICY = ScimPolicy(
    unknown=ScimPolicy.Unknown.ignore,
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)


def without_null_members(payload: Any) -> Any:
    """A PATCH body whose operations' value objects drop their ``null`` members.

    RFC 7643 2.5: a null attribute is an unassigned one. Entra ID removes a member with
    ``{"$ref": null, "value": ID}``; with the null kept, the value filter compares
    ``$ref`` too and matches no member, and the member stays.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("Operations"), list):
        return payload
    operations = []
    for operation in payload["Operations"]:
        if isinstance(operation, dict) and "value" in operation:
            operation = {**operation, "value": _drop_nulls(operation["value"])}
        operations.append(operation)
    return {**payload, "Operations": operations}


def _drop_nulls(value: Any) -> Any:
    # A value object, or a list of them (the shapes a PATCH value takes); not deeper, so no recursion.
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return _without_nulls(value)


def _without_nulls(value: Any) -> Any:
    return {key: item for key, item in value.items() if item is not None} if isinstance(value, dict) else value


def answer(payload: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> Response:
    response = uncached(current_app.response_class(json.dumps(payload), status=status, mimetype=MEDIA_TYPE))
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def error(status: int, detail: str, scim_type: str | None = None, headers: dict[str, str] | None = None) -> Response:
    """An error in RFC 7644 3.12's shape (``status`` a string, as the RFC's examples show)."""
    body = Error(status=status, scim_type=scim_type, detail=detail).model_dump()
    return answer(body, status, headers)


def exception_answer(exc: SCIMException) -> Response:
    found = exc.to_error()
    return error(exc.status, found.detail or exc.detail, found.scim_type or None)


def body() -> dict[str, Any]:
    """The request's JSON object; larger than AUTHSVC_SCIM_MAX_BODY: 413; not a JSON object, or holding
    text no database can store (NUL, a lone surrogate): 400 invalidSyntax."""
    limit = settings().scim_max_body
    if (request.content_length or 0) > limit:
        raise PayloadTooLargeException(detail=f"The request body is larger than {limit} bytes.")
    raw = request.stream.read(limit + 1)
    if len(raw) > limit:
        raise PayloadTooLargeException(detail=f"The request body is larger than {limit} bytes.")
    try:
        # The service's JSON rules, and no NUL: SCIM stores the strings it is given as they are.
        payload = validation.json_body(raw, allow_nul=False)
    except validation.Invalid as exc:
        raise InvalidSyntaxException(detail=str(exc)) from None
    if not isinstance(payload, dict):
        raise InvalidSyntaxException(detail="The request body is not a JSON object.")
    return payload


def version_of(resource: dict[str, Any]) -> str:
    """A weak ETag (RFC 7644 3.14) that changes whenever what a client may read does."""
    content = {k: v for k, v in resource.items() if k != "meta"}
    digest = hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:20]
    return f'W/"{digest}"'


_CHANGED = "The resource changed since the version named in If-Match."


def _if_match() -> list[str] | None:
    """The versions ``If-Match`` names; None without one, or with ``*`` (any version)."""
    wanted = request.headers.get("If-Match")
    if not wanted:
        return None
    tags = [tag.strip() for tag in wanted.split(",")]
    return None if "*" in tags else tags


def version(resource: Resource[Any]) -> str:
    """The version (ETag) the resource's ``read`` stamped on its meta."""
    # users.model and groups.model always set meta.version; a resource without one is a fault here.
    assert resource.meta is not None and resource.meta.version is not None
    return resource.meta.version


def check_if_match(current: str) -> None:
    """Refuse a write whose ``If-Match`` names another version: 412 (RFC 7644 3.14)."""
    tags = _if_match()
    if tags is None:
        return
    bare = current.removeprefix("W/")
    if not any(tag.removeprefix("W/") == bare for tag in tags):
        raise PreconditionFailedException(detail=_CHANGED)


def invalid_value(detail: str) -> InvalidValueException:
    return InvalidValueException(detail=detail)


def next_stamp(previous: int | None) -> int:
    """A resource's modification stamp (ms) after a write: now, and always later than ``previous``,
    so that two writes in one millisecond (or under a test's frozen clock) still differ."""
    return max(clock.now_ms(), (previous or 0) + 1)


def claim(entity: Any, stamp: Any, row_id: int, seen: int | None) -> int:
    """The stamp of this write; under ``If-Match``, claimed atomically (RFC 7644 3.14).

    ``check_if_match`` compares the version this request read; two writes that read
    the same one would both pass it and the later would silently undo the earlier.
    So the row's ``stamp`` column moves from ``seen`` (what this request read) to the
    new stamp in one conditional UPDATE, which holds the row until the commit: a
    write that finds it moved meanwhile is 412. Without ``If-Match`` (or with ``*``)
    a write applies over whatever came before it, and nothing is claimed.
    """
    new = next_stamp(seen)
    if _if_match() is None:
        return new
    unchanged = stamp.is_(None) if seen is None else stamp == seen
    result = db.session.execute(
        update(entity)
        .where(entity.id == row_id, unchanged)
        .values({stamp.key: new})
        .execution_options(synchronize_session=False)
    )
    if rows_affected(result) == 0:
        db.session.rollback()
        raise PreconditionFailedException(detail=_CHANGED)
    return new
