"""The field types admin schemas are made of: bounded text, lifetimes, lists of strings, a domain's scopes.

Each type carries its bounds twice: as pydantic constraints (which also go
into the OpenAPI document) and, where a rule of ``authsvc.core.validation``
applies, as that rule, so the API, the console and the CLI refuse alike.

A field's type is written ``Annotated[str, Text(320, min_length=1), Field(description=...)]``:
the type checker reads the first argument, pydantic the rest. ``Text``, ``Whole``,
``Each`` and ``Mapping`` are groups of pydantic's metadata (``annotated_types.GroupedMetadata``,
as pydantic's own ``StringConstraints``); what a field says about itself (its description,
``SECRET``) is a ``Field`` beside them, where pydantic looks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, TypeVar

from annotated_types import GroupedMetadata
from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints, ValidationInfo

from authsvc.core import validation

T = TypeVar("T")

if TYPE_CHECKING:
    Omissible: TypeAlias = T | None
else:

    class Omissible:
        """A field a body may leave out: ``Omissible[Name] = None``.

        The model's attribute is None when the body left the field out (or sent null where
        the field admits none: ``base.Schema``); pydantic validates what a body gives by the
        field's own type, and the document shows that type alone. To the type checker it is
        ``T | None``; to pydantic, ``T``.
        """

        def __class_getitem__(cls, item: Any) -> Any:
            return item


def _without_nul(max_length: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        if "\x00" in value:
            raise validation.Invalid(f"must be at most {max_length} characters, without NUL")
        return value

    return check


@dataclass(frozen=True)
class Text(GroupedMetadata):
    """A trimmed string of at most ``max_length`` characters without NUL, checked by ``rule`` if given."""

    max_length: int = 200
    min_length: int = 0
    rule: Callable[[str], Any] | None = None

    def __iter__(self) -> Iterator[object]:
        yield from StringConstraints(min_length=self.min_length, max_length=self.max_length)
        yield AfterValidator(_without_nul(self.max_length))
        if self.rule:
            yield AfterValidator(self.rule)


def _trimmed(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


# On a Literal: one of its values, trimmed as every string is (a Literal alone is compared untrimmed).
TRIMMED = BeforeValidator(_trimmed)
# A secret: written, never shown (write-only in the document), kept out of a model's repr.
SECRET = Field(json_schema_extra={"writeOnly": True}, repr=False)

# A record's display name: not empty, at most 200 characters.
Name = Annotated[str, Text(200, min_length=1)]


@dataclass(frozen=True)
class Each(GroupedMetadata):
    """On a list of strings: duplicates dropped in order, each checked by ``rule`` if given."""

    rule: Callable[[str], str] | None = None

    def __iter__(self) -> Iterator[object]:
        yield AfterValidator(self.unique)

    def unique(self, values: list[str]) -> list[str]:
        rule = self.rule
        return list(dict.fromkeys(rule(v) for v in values) if rule else dict.fromkeys(values))


# A list of strings, each 1 to 2000 characters (untrimmed); ``Each`` beside it drops duplicates.
StringList = list[Annotated[str, StringConstraints(min_length=1, max_length=2000, strip_whitespace=False)]]
Strings = Annotated[StringList, Each()]


@dataclass(frozen=True)
class Whole(GroupedMetadata):
    """On an int: a whole number from ``low`` to ``high``; ``message`` says so when it is not."""

    low: int
    high: int
    message: str

    def __iter__(self) -> Iterator[object]:
        yield AfterValidator(self.within)
        yield Field(json_schema_extra={"minimum": self.low, "maximum": self.high})

    def within(self, value: int) -> int:
        if not self.low <= value <= self.high:
            raise validation.Invalid(self.message)
        return value


TTL_DESCRIPTION = "Seconds; null or 0 for the service's default."
# A lifetime in seconds; 0 means the default, as null does (validation.ttl).
Lifetime = Annotated[
    int,
    AfterValidator(validation.ttl),
    Field(json_schema_extra={"minimum": 0, "maximum": validation.MAX_TTL}, description=TTL_DESCRIPTION),
]


def _domain_scopes(value: str, info: ValidationInfo) -> str:
    """Scopes the target domain knows or reserves; the domain is in the context ``read`` was given."""
    domain = (info.context or {}).get("domain")
    if domain is None:
        # Without it any well-formed scope would pass: a caller that forgot it must not get that far.
        raise RuntimeError("read() needs domain= for a schema with a domain's scopes")
    return validation.scopes(value, domain.assignable_scopes)


# On a Text: space-separated scopes, each known to the target domain or reserved.
DOMAIN_SCOPES = AfterValidator(_domain_scopes)

DOMAIN_DESCRIPTION = "The domain's id; default the credential's own domain. An admin may name only their own."
DomainId = Annotated[str, Text(20), Field(description=DOMAIN_DESCRIPTION)]
