"""The field types admin schemas are made of: bounded text, lifetimes, lists of strings, a domain's scopes.

Each type carries its bounds twice: as pydantic constraints (which also go
into the OpenAPI document) and, where a rule of ``authsvc.core.validation``
applies, as that rule, so the API, the console and the CLI refuse alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints, ValidationInfo

from authsvc.core import validation


def _without_nul(max_length: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        if "\x00" in value:
            raise validation.Invalid(f"must be at most {max_length} characters, without NUL")
        return value

    return check


def Text(  # noqa: N802 - a type, read as one: name: Text(320)
    max_length: int = 200, *, min_length: int = 0, rule: Callable[[str], Any] | None = None, **field: Any
) -> Any:
    """A trimmed string of at most ``max_length`` characters without NUL, checked by ``rule`` if given."""
    checks = [AfterValidator(_without_nul(max_length))] + ([AfterValidator(rule)] if rule else [])
    return Annotated[str, StringConstraints(min_length=min_length, max_length=max_length), *checks, Field(**field)]


def _trimmed(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def Choice(*values: str, **field: Any) -> Any:  # noqa: N802 - a type, read as one: preset: Choice("microsoft")
    """One of ``values``, trimmed as every string is (a Literal alone is compared untrimmed)."""
    return Annotated[Literal[values], BeforeValidator(_trimmed), Field(**field)]


def Secret(max_length: int, **field: Any) -> Any:  # noqa: N802
    """Text that is a secret: written, never shown (write-only in the document), kept out of a model's repr."""
    return Text(max_length, json_schema_extra={"writeOnly": True}, repr=False, **field)


def Name(**field: Any) -> Any:  # noqa: N802
    """A record's display name: not empty, at most 200 characters."""
    return Text(200, min_length=1, **field)


def Strings(rule: Callable[[str], str] | None = None, **field: Any) -> Any:  # noqa: N802
    """A list of strings (each 1 to 2000 characters), duplicates dropped in order, each checked by ``rule``."""

    def unique(values: list[str]) -> list[str]:
        return list(dict.fromkeys(rule(v) for v in values) if rule else dict.fromkeys(values))

    item = Annotated[str, StringConstraints(min_length=1, max_length=2000, strip_whitespace=False)]
    return Annotated[list[item], Field(**field), AfterValidator(unique)]


def Whole(low: int, high: int, message: str, **field: Any) -> Any:  # noqa: N802
    """A whole number from ``low`` to ``high``; ``message`` says so when it is not."""

    def within(value: int) -> int:
        if not low <= value <= high:
            raise validation.Invalid(message)
        return value

    return Annotated[int, AfterValidator(within), Field(json_schema_extra={"minimum": low, "maximum": high}, **field)]


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


def DomainScopes(*, min_length: int = 0, **field: Any) -> Any:  # noqa: N802
    """Space-separated scopes, each known to the target domain or reserved."""
    return Annotated[Text(2000, min_length=min_length), AfterValidator(_domain_scopes), Field(**field)]


DOMAIN_DESCRIPTION = "The domain's id; default the credential's own domain. An admin may name only their own."
DomainId = Text(20, description=DOMAIN_DESCRIPTION)
