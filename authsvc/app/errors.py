"""The error handlers: every error is answered as JSON, 503 when Redis or the database is down.

A path value no record can hold (NUL, a lone surrogate) is refused here, once, before any view or hook
reads it: ``No such record``, 404, in the format of the surface asked: JSON, a page where the view
declared ``@shows_pages`` (authsvc.core.policy), a SCIM error (SCIM's blueprint answers its own errors,
authsvc.scim.handlers), the surface's own where it declared ``@writes_errors`` (Shared Signals). Such a
surface's other refusals answered here (a method its route has not, a malformed query string) are its own too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from authlib.oauth2 import OAuth2Error
from flask import Flask, Response, current_app, request
from flask_limiter import RateLimitExceeded
from sqlalchemy import exc as sql
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from authsvc.app import limits
from authsvc.core.database import db
from authsvc.core.errors import (
    ANSWERS,
    REDIS_DOWN,
    ApiError,
    NotFound,
    answer,
    json_error,
    outage,
    title,
    too_many_requests,
    unavailable,
)
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.policy import Policy, policy_of
from authsvc.core.settings import settings
from authsvc.core.validation import storable_text
from authsvc.oauth.server import authorization_server
from authsvc.web import metrics
from authsvc.web.pages import page

log = logging.getLogger(__name__)


def _http_error_name(exc: HTTPException) -> str:
    return {
        400: "invalid_request",
        404: "not_found",
        405: "method_not_allowed",
        413: "request_too_large",
        415: "unsupported_media_type",
        431: "request_header_fields_too_large",
    }.get(exc.code or 500, (exc.name or "error").lower().replace(" ", "_"))


def _forget_failed_transaction() -> None:
    try:
        db.session.rollback()
    except Exception:  # noqa: BLE001 - the connection may be gone; the session is discarded anyway
        log.debug("rollback after a database failure failed too")


def refuse_a_malformed_query_string() -> None:
    # RFC 3986 allows only ASCII in a query; anything else must come
    # percent-encoded. werkzeug fails to decode raw non-UTF-8 bytes there,
    # wherever the query is first read: refuse it once, up front.
    try:
        request.query_string.decode("ascii")
    except UnicodeDecodeError:
        raise ApiError(400, "invalid_request", "The query string has bytes that are not percent-encoded.") from None


class UnstorablePathValue(NotFound):
    """A path value no record can hold: NUL (PostgreSQL refuses it in a query parameter, a 500) or a lone surrogate."""


def refuse_unstorable_path_values() -> None:
    """Such a path value is no record's, for every route at once, before a blueprint's hooks (SCIM's
    authentication) or the view read it."""
    values = request.view_args or {}
    if not all(storable_text(value) for value in values.values() if isinstance(value, str)):
        raise UnstorablePathValue()


def _surface() -> tuple[Policy, Policy]:
    """What the view asked, and its blueprint, declared. A method the route has not chose no view: then the
    route's own (the view one of its methods would have)."""
    endpoint = request.endpoint
    missed = request.routing_exception
    if endpoint is None and isinstance(missed, MethodNotAllowed) and missed.valid_methods:
        endpoint = _endpoint_for(next(iter(missed.valid_methods)))
    view = current_app.view_functions.get(endpoint or "")
    blueprint = current_app.blueprints.get((endpoint or "").rpartition(".")[0])
    return policy_of(view), policy_of(blueprint)


def _endpoint_for(method: str) -> str | None:
    adapter = current_app.create_url_adapter(request)
    try:
        return adapter.match(method=method)[0] if adapter is not None else None
    except HTTPException:
        return None


def _own_format(status: int, error: str, description: str, headers: dict[str, str] | None) -> Response | None:
    """The refusal as the surface writes its own (``@writes_errors``), or None where it has none."""
    view, blueprint = _surface()
    writer = view.errors or blueprint.errors
    if writer is None:
        return None
    response = writer(status, error, description)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def handle_api_error(exc: ApiError) -> Response:
    own = _own_format(exc.status, exc.error, exc.description, exc.headers)
    return own or json_error(exc.status, exc.error, exc.description, exc.headers, exc.extra)


def handle_feature_error(exc: Exception) -> Response:
    """A feature's exception (authsvc.core.errors.ANSWERS), answered as its table entry says."""
    return handle_api_error(answer(exc))


def handle_unstorable_path_value(exc: UnstorablePathValue) -> Response:
    """As the table answers NotFound: a page where the view (or its blueprint) shows pages, else JSON.

    The page needs the request's domain and language (its body, for ``ui_locales``): when it cannot
    have them (an unknown host, a body past the limit), the JSON answer stands in.
    """
    refusal = answer(exc)
    view, blueprint = _surface()
    if view.pages or blueprint.pages:
        try:
            return page("message.html", refusal.status, title=title(refusal), message=refusal.description)
        except _UNRENDERED:
            pass
    return handle_api_error(refusal)


def handle_oauth2_error(exc: OAuth2Error) -> Response:
    # Authlib decides between a JSON body and a redirect to a validated
    # redirect_uri (RFC 6749 4.1.2.1) and adds WWW-Authenticate where due.
    # It looks the domain up (an unknown host is a 404): what that raises
    # is answered here, since Flask sends anything an error handler
    # raises to no other handler, as a bare 500.
    try:
        response: Response = authorization_server().handle_error_response(None, exc)
    except _ANSWERED_BY_THEIR_OWN as refused:
        return _handler_for(refused)(refused)
    except Exception as unexpected:  # noqa: BLE001 - answered as any other fault is
        return handle_unexpected(unexpected)
    uncached(response, referrer_policy=NO_REFERRER)
    response.headers["Pragma"] = "no-cache"
    return response


def handle_rate_limited(exc: RateLimitExceeded) -> Response:
    metrics.RATE_LIMITED.labels(reason="rate_limit").inc()
    retry_after = limits.retry_after()
    if request.blueprint == "scim":
        from authsvc.scim import protocol as scim_protocol  # scim2-models: loaded by SCIM requests only

        description = f"Too many requests (at most {exc.description})."
        return scim_protocol.error(429, description, "tooMany", {"Retry-After": str(retry_after)})
    return too_many_requests(
        "rate_limited", f"Too many requests (at most {exc.description}). Retry in {retry_after} s.", retry_after
    )


def handle_http_error(exc: HTTPException) -> Response:
    description = exc.description or exc.name
    if exc.code == 413:
        description = f"The request body is larger than {settings().max_body_bytes} bytes."
    headers = {}
    if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
        headers["Allow"] = ", ".join(exc.valid_methods)
    status, error = exc.code or 500, _http_error_name(exc)
    return _own_format(status, error, description, headers) or json_error(status, error, description, headers)


def handle_outage(exc: Exception) -> Response:
    """Redis or the database down (authsvc.core.errors.outage): 503 with Retry-After.

    Any other database error (a constraint, a value it refuses) is a fault.
    """
    description = outage(exc)
    if description is None:
        return handle_unexpected(exc)
    cause = exc.orig if isinstance(exc, sql.DBAPIError) else exc
    log.warning("outage on %s %s: %s (%s)", request.method, request.path, cause.__class__.__name__, description)
    if not isinstance(exc, sql.TimeoutError):  # no connection was had: nothing to roll back
        _forget_failed_transaction()
    return unavailable(description)


def handle_unexpected(exc: Exception) -> Response:
    # Logged with its trace for operators; the client sees no detail.
    log.exception("unhandled error on %s %s", request.method, request.path)
    _forget_failed_transaction()
    return json_error(500, "server_error", "The server met an unexpected condition.")


# Which handler answers which exception; Flask picks the entry of the nearest class in the MRO.
HANDLERS: dict[type[Exception], Callable[[Any], Response]] = {
    ApiError: handle_api_error,
    **dict.fromkeys(ANSWERS, handle_feature_error),
    UnstorablePathValue: handle_unstorable_path_value,
    OAuth2Error: handle_oauth2_error,
    RateLimitExceeded: handle_rate_limited,
    HTTPException: handle_http_error,
    **dict.fromkeys((*REDIS_DOWN, sql.DBAPIError, sql.TimeoutError), handle_outage),
    Exception: handle_unexpected,
}


# What an error answer's own handler may raise that is answered as it would be from a view.
_ANSWERED_BY_THEIR_OWN: tuple[type[Exception], ...] = (ApiError, *ANSWERS, sql.DBAPIError, sql.TimeoutError)
# What stops a refusal's page from rendering: then its JSON answer stands in.
_UNRENDERED: tuple[type[Exception], ...] = (*_ANSWERED_BY_THEIR_OWN, HTTPException)


def _handler_for(exc: Exception) -> Callable[[Any], Response]:
    """The handler Flask would pick for ``exc``: the entry of its nearest class."""
    return next(HANDLERS[cls] for cls in type(exc).__mro__ if cls in HANDLERS)


def init_app(app: Flask) -> None:
    app.before_request(refuse_a_malformed_query_string)
    app.before_request(refuse_unstorable_path_values)
    for exception, handler in HANDLERS.items():
        app.register_error_handler(exception, handler)
