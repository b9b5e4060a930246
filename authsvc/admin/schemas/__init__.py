"""What the admin writes accept, declared once (pydantic) for the API, the console and the command line.

One module per resource. ``read(schema, data)`` checks a parsed JSON body
against a schema and reports every problem as ``{field: message}``; the
service functions in ``authsvc.admin`` then apply the rules that need the
database or the actor. ``python -m authsvc.openapi`` writes the admin
request bodies of the OpenAPI document from these schemas.

This package's own import loads no pydantic (about 10 MB a worker): the
service functions import their schema where they read one, so a worker that
answers no admin write never carries it (docs/performance.md). Constants the
command line and the console need are in ``authsvc.admin.schemas.choices``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from authsvc.admin.actors import Actor
    from authsvc.admin.schemas.base import Schema
    from authsvc.core.models import Domain

__all__ = ["Schema", "read", "target_domain"]

S = TypeVar("S", bound="Schema")


def read(schema: type[S], data: Any, **context: Any) -> S:
    """``data`` (a parsed JSON body) as ``schema``; ValidationFailed with a message per field."""
    from authsvc.admin.schemas import base

    return base.read(schema, data, **context)


def target_domain(actor: Actor, data: Any) -> Domain:
    """The domain a new record goes to: the body's ``domain`` (an id), or the actor's own; it must be changeable."""
    from authsvc.admin.schemas import base

    return base.target_domain(actor, data)


def __getattr__(name: str) -> Any:
    if name == "Schema":
        from authsvc.admin.schemas.base import Schema

        return Schema
    raise AttributeError(name)
