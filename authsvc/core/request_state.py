"""What a request notes about itself as it goes: one typed object, stored once on ``flask.g``.

``state()`` is the request's ``RequestState``, made at its first use. Its
fields are the core's, each written by the core module that reads it: a
feature tells it through that module's function (``tenancy.found``, the
domain a client lookup read; ``audit.acting_for``, who acts when no credential
says), so no module of the core reads what a feature wrote. A feature keeps
what only it reads in a typed record of its own, the request's one instance
of which ``part(Record)`` gives: the core names no feature's type.

It lives on ``flask.g``, so it exists from the request context on, and each
request starts with a new one (``init_app``): ``g`` is the app context's, which
several requests share when one context wraps them (a test's, a command's). What must
pass from before Flask (a WSGI layer) to a view goes in the WSGI environ under
one key, with one typed accessor in the module that writes it
(``authsvc.api.fastpath.database_error_left``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from flask import Flask, g, has_request_context, request_started

if TYPE_CHECKING:
    from authsvc.core.models import Domain

_KEY = "authsvc_state"
Part = TypeVar("Part")


@dataclass
class RequestState:
    # The request's domain (authsvc.core.tenancy; the token endpoint finds it with the client).
    domain: Domain | None = None
    # The request id of every log line and of the answer's header (authsvc.web.logs).
    request_id: str | None = None
    # When the request began, for its duration (authsvc.web.metrics).
    started: float | None = None
    # Redis did not answer once in this request: it is not tried again in it (authsvc.core.store).
    redis_unreachable: bool = False
    # The signed-in user the request acts for, when no credential says (authsvc.core.audit.actor_of).
    acting_user_id: int | None = None
    # Each feature's own record, by its type (``part``).
    parts: dict[type, Any] = field(default_factory=dict)


def _fresh(sender: Flask, **extra: Any) -> None:
    g.pop(_KEY, None)


def init_app(app: Flask) -> None:
    """Give each request of ``app`` a new state, before its first hook (Flask's ``request_started``)."""
    request_started.connect(_fresh, app)


def state() -> RequestState:
    """The request's state (a request context is needed)."""
    # The namespace behind ``g``, taken once through the proxy's documented accessor: going through
    # the proxy for each read and write cost five Python calls a use, about thirty uses a token request.
    noted = g._get_current_object().__dict__
    found: RequestState | None = noted.get(_KEY)
    if found is None:
        found = noted[_KEY] = RequestState()
    return found


def state_if_in_request() -> RequestState | None:
    """The request's state, or None outside a request (a command, a background job)."""
    return state() if has_request_context() else None


def part(kind: type[Part]) -> Part:
    """The request's one ``kind`` record, made (with its defaults) at the first use."""
    parts = state().parts
    # parts holds a kind's record under its type (an assignment, not typing.cast: a call fewer)
    found: Part | None = parts.get(kind)
    if found is None:
        found = parts[kind] = kind()
    return found
