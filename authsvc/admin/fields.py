"""Reading admin input: typed fields of a JSON object, every problem collected before failing."""

from __future__ import annotations

from typing import Any

from authsvc.admin.actors import Actor, ValidationFailed, require_change
from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.models import Domain


class Fields:
    """Typed access to a JSON object's fields, collecting every problem before failing."""

    def __init__(self, data: Any, *, partial: bool):
        if not isinstance(data, dict):
            raise ValidationFailed({"body": "must be a JSON object"})
        self.data = data
        self.partial = partial
        self.errors: dict[str, str] = {}

    def has(self, name: str) -> bool:
        return name in self.data

    def _get(self, name: str, required: bool) -> Any:
        # null is missing (validation.json_body); has() still tells an update's
        # explicit null, which resets an optional setting to its default.
        if self.data.get(name) is None:
            if required and not self.partial:
                self.errors[name] = "is required"
            return None
        return self.data[name]

    def string(self, name: str, *, required: bool = False, max_length: int = 200, rule: Any = None) -> str | None:
        value = self._get(name, required)
        if value is None:
            return None
        if not isinstance(value, str):
            self.errors[name] = "must be a string"
            return None
        value = value.strip()
        if required and not value:
            self.errors[name] = "must not be empty"
            return None
        if len(value) > max_length or "\x00" in value:
            self.errors[name] = f"must be at most {max_length} characters, without NUL"
            return None
        return self.check(name, rule, value) if rule else value

    def boolean(self, name: str) -> bool | None:
        value = self._get(name, False)
        if value is not None and not isinstance(value, bool):
            self.errors[name] = "must be true or false"
            return None
        return value

    def integer(self, name: str, rule: Any = None) -> int | None:
        value = self._get(name, False)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.errors[name] = "must be a whole number"
            return None
        return self.check(name, rule, value) if rule else value

    def strings(self, name: str, *, required: bool = False, rule: Any = None) -> list[str] | None:
        value = self._get(name, required)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and 0 < len(v) <= 2000 for v in value):
            self.errors[name] = "must be a list of strings"
            return None
        if required and not value:
            self.errors[name] = "must not be empty"
            return None
        try:
            return list(dict.fromkeys(rule(v) for v in value)) if rule else list(dict.fromkeys(value))
        except validation.Invalid as exc:
            self.errors[name] = str(exc)
            return None

    def mapping(self, name: str) -> dict | None:
        value = self._get(name, False)
        if value is not None and not isinstance(value, dict):
            self.errors[name] = "must be a JSON object"
            return None
        return value

    def check(self, name: str, rule: Any, *args: Any) -> Any:
        try:
            return rule(*args)
        except validation.Invalid as exc:
            self.errors[name] = str(exc)
            return None

    def done(self) -> None:
        if self.errors:
            raise ValidationFailed(self.errors)


def domain_field(actor: Actor, fields: Fields) -> Domain | None:
    """The domain named by the body's ``domain`` (an id), or the actor's own; must be changeable."""
    given = fields.string("domain", max_length=20)
    domain_id = validation.record_id(given) if given else actor.domain_id
    domain = db.session.get(Domain, domain_id) if domain_id is not None else None
    if domain is None or not actor.can_read(domain.id):
        fields.errors["domain"] = "no such domain"
        return None
    require_change(actor, domain.id)
    return domain
