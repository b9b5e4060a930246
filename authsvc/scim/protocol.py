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
    SCIMException,
    ScimPolicy,
)

from authsvc.core import validation
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


def check_if_match(current: str) -> None:
    """Refuse a write whose ``If-Match`` names another version: 412 (RFC 7644 3.14)."""
    wanted = request.headers.get("If-Match")
    if not wanted:
        return
    tags = [tag.strip() for tag in wanted.split(",")]
    if "*" in tags:
        return
    bare = current.removeprefix("W/")
    if not any(tag.removeprefix("W/") == bare for tag in tags):
        raise PreconditionFailedException(detail="The resource changed since the version named in If-Match.")


def invalid_value(detail: str) -> InvalidValueException:
    return InvalidValueException(detail=detail)
