"""Who acts on admin data, what they may reach, and how a change is recorded.

Who may: an admin credential changes its domain, a support credential reads
it, a system admin reaches every domain, and so does the command line (an
operator on the server, audited as ``cli``). Every change is saved together
with its audit record (before/after, no secrets).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError

from authsvc.core import audit, validation
from authsvc.core.database import db
from authsvc.core.errors import Conflict, Forbidden, NotFound
from authsvc.core.models import Application, Domain, User
from authsvc.core.permissions import SUPPORT_OR_ADMIN, Permission


@dataclass
class Actor:
    """Who acts, and what they may do."""

    user: User | None  # None for the command line, which acts as no account
    name: str  # for audit records: "user:12", "api_key:3f9c…", "cli"
    permissions: Permission

    @property
    def system_admin(self) -> bool:
        return (self.user is None or self.user.system_admin) and bool(self.permissions & Permission.ADMIN)

    @property
    def user_id(self) -> int | None:
        return self.user.id if self.user is not None else None

    @property
    def domain_id(self) -> int | None:
        """The actor's own domain; None for the command line, which names a domain each time."""
        return self.user.domain_id if self.user is not None else None

    def can_read(self, domain_id: int) -> bool:
        return self.system_admin or (domain_id == self.domain_id and bool(self.permissions & SUPPORT_OR_ADMIN))

    def can_change(self, domain_id: int) -> bool:
        return self.system_admin or (domain_id == self.domain_id and bool(self.permissions & Permission.ADMIN))


COMMAND_LINE = "cli"


def command_line() -> Actor:
    """The operator at ``flask --app app ...``: a system admin's powers, no account.

    Whoever runs the commands already holds the database credentials; the
    admin rules still apply, and every change is audited with actor ``cli``.
    """
    return Actor(user=None, name=COMMAND_LINE, permissions=SUPPORT_OR_ADMIN)


def audit_change(
    actor: Actor, event: str, domain_id: int | None, target: str, before: Any = None, after: Any = None
) -> None:
    details = {}
    if before is not None:
        details["before"] = before
    if after is not None:
        details["after"] = after
    audit.record(event, domain_id=domain_id, actor=actor.name, target=target, details=details, commit=False)


def commit(what: str) -> None:
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        raise Conflict(f"{what} already exists") from None


def save_new(actor: Actor, record: Any, kind: str, domain_id: int, what: str) -> None:
    """Add ``record`` and commit it with its audit record (``{kind}.created``); Conflict if ``what`` already exists."""
    db.session.add(record)
    try:
        db.session.flush()  # its id, which the audit record names
    except IntegrityError:
        db.session.rollback()
        raise Conflict(f"{what} already exists") from None
    audit_change(actor, f"{kind}.created", domain_id, f"{kind}:{record.id}", after=record.as_json())
    commit(what)


def save_change(
    actor: Actor,
    record: Any,
    kind: str,
    before: Any,
    values: dict[str, Any],
    noted: dict[str, Any] | None = None,
    what: str | None = None,
) -> None:
    """Set ``values`` on ``record`` and commit them with the audit record (``{kind}.updated``, before and after).

    ``noted`` adds what the record's JSON does not show (a secret changed); an encrypted or hashed
    secret comes in ``values`` under its column's name. With ``what``, a change that would duplicate
    another record is a Conflict naming it.
    """
    for name, value in values.items():
        setattr(record, name, value)
    after = record.as_json() | (noted or {})
    audit_change(actor, f"{kind}.updated", record.domain_id, f"{kind}:{record.id}", before, after)
    if what is None:
        db.session.commit()
    else:
        commit(what)


def get(actor: Actor, model: type, record_id: str) -> Any:
    """The record ``record_id`` of ``model``, if the actor may read it; else NotFound."""
    key: Any = record_id
    if model in (Domain, Application, User):
        key = validation.record_id(record_id)
        if key is None:
            raise NotFound()
    elif not validation.text_id(record_id):
        raise NotFound()
    record = db.session.get(model, key)
    if record is None:
        raise NotFound()
    domain_id = record.id if model is Domain else record.domain_id
    if not actor.can_read(domain_id):
        raise NotFound()
    return record


def require_change(actor: Actor, domain_id: int) -> None:
    if not actor.can_change(domain_id):
        raise Forbidden()


def require_change_of_user(actor: Actor, user: User) -> None:
    """Like _require_change, and a system admin's account is only a system admin's to change.

    Otherwise an admin of the domain that holds it could reset its password or
    give it an admin key, and reach every domain.
    """
    require_change(actor, user.domain_id)
    if user.system_admin and not actor.system_admin:
        raise Forbidden()


def private_network_problems(values: dict[str, Any], actor: Actor, what: str) -> dict[str, str]:
    """``allow_private_network`` is a system admin's to set: ``what`` is then called from inside our network."""
    if values.get("allow_private_network") and not actor.system_admin:
        return {"allow_private_network": f"only a system admin may allow {what} on private networks"}
    return {}
