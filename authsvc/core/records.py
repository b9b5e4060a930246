"""Typed records kept in the store as JSON objects: one pair of functions, ``dump`` and ``load``, for every kind.

A record is a dataclass; each field is stored under its name, or under the name it was first stored
under (``field(metadata=stored_as("continue"))``), so that records written before a deploy are still
read after it. A field with a default may be missing from a record written before the field existed:
it reads as its default, or as what ``field(metadata=when_missing(...))`` makes of the record. A field
marked ``omit_none`` is left out of the record while it is None. Values are stored as they are: the
fields hold what JSON holds (str, int, bool, None, lists and objects of them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

_STORED_AS = "authsvc.records.stored_as"
_WHEN_MISSING = "authsvc.records.when_missing"
_OMIT_NONE = "authsvc.records.omit_none"

Record = TypeVar("Record")


def stored_as(name: str) -> dict[str, Any]:
    """A field's metadata: stored under ``name`` rather than the field's own."""
    return {_STORED_AS: name}


def when_missing(value: Callable[[Mapping[str, Any]], Any]) -> dict[str, Any]:
    """A field's metadata: a record without it (written before it existed) reads as ``value(record)``."""
    return {_WHEN_MISSING: value}


OMIT_NONE: dict[str, Any] = {_OMIT_NONE: True}


class _Field(NamedTuple):
    name: str
    stored: str
    init: bool
    required: bool
    when_missing: Callable[[Mapping[str, Any]], Any] | None
    omit_none: bool


# Each class's fields, read once: a record is loaded on the code exchange's path.
_PLANS: dict[type[Any], tuple[_Field, ...]] = {}


def _fields(cls: type[Any]) -> tuple[_Field, ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _plan(cls)
    return plan


def _plan(cls: type[Any]) -> tuple[_Field, ...]:
    return tuple(
        _Field(
            name=f.name,
            stored=f.metadata.get(_STORED_AS, f.name),
            init=f.init,
            required=f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            when_missing=f.metadata.get(_WHEN_MISSING),
            omit_none=bool(f.metadata.get(_OMIT_NONE)),
        )
        for f in dataclasses.fields(cls)
    )


def dump(record: Any) -> dict[str, Any]:
    """The JSON object that stores ``record`` (a dataclass instance)."""
    data: dict[str, Any] = {}
    for f in _fields(type(record)):
        value = getattr(record, f.name)
        if value is None and f.omit_none:
            continue
        data[f.stored] = value
    return data


def load(cls: type[Record], data: Mapping[str, Any]) -> Record:
    """The ``cls`` a stored JSON object holds; KeyError if it lacks a field that has no default."""
    values: dict[str, Any] = {}
    for f in _fields(cls):
        if not f.init:
            continue
        if f.stored in data:
            values[f.name] = data[f.stored]
        elif f.when_missing is not None:
            values[f.name] = f.when_missing(data)
        elif f.required:
            raise KeyError(f.stored)
    return cls(**values)
