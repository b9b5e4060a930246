"""SCIM Users (RFC 7643 4.1) over our users: what SCIM sees, reading them as resources, writing them back.

``userName`` is the sign-in e-mail (unique per domain, case-insensitively, as the
column is stored lower-cased), ``displayName`` the name, ``active`` the opposite
of disabled, ``externalId`` the provisioning client's id; the other attributes
(``name``, ``emails``, ``title``, ...) are kept as the client gave them. Privileged
accounts and service accounts are not SCIM's: they are never listed or returned,
and writing to one is 403.
"""

from __future__ import annotations

from typing import Any

from flask import url_for
from scim2_models import (
    Context,
    ForbiddenException,
    InvalidValueException,
    ListResponse,
    Meta,
    NotFoundException,
    PatchOp,
    SearchRequest,
    UniquenessException,
)
from scim2_models import User as ScimUser
from sqlalchemy import BigInteger, Select, and_, cast, func, select
from sqlalchemy.orm import InstrumentedAttribute

from authsvc.auth import sessions
from authsvc.core import actors, audit, validation
from authsvc.core.database import db
from authsvc.core.models import ScimGroup, ScimGroupMember, User
from authsvc.core.settings import settings
from authsvc.scim import deprovisioning, protocol, queries
from authsvc.scim.auth import Provisioner

PROVISIONED_BY = "scim"
# Attributes held in columns, or never stored (password, read-only groups, meta).
_NOT_IN_PROFILE = {"schemas", "id", "meta", "userName", "active", "externalId", "groups", "password", "displayName"}

_SEEN = and_(~User.privileged, User.scim_deleted_at.is_(None))

COLUMNS = {
    "username": queries.Column(User.email, "text"),
    "emails": queries.Column(User.email, "text"),
    "emails.value": queries.Column(User.email, "text"),
    "externalid": queries.Column(User.external_id, "exact"),
    "id": queries.Column(User.id, "id"),
    "displayname": queries.Column(func.lower(User.name), "text"),
    "active": queries.Column(User.disabled, "custom", lambda op, value: _active(op, value)),
    "meta.created": queries.Column(User.created_at, "seconds"),
    # Milliseconds, in 64 bits: PostgreSQL's integer product would overflow.
    "meta.lastmodified": queries.Column(
        func.coalesce(User.scim_modified_at, cast(User.created_at, BigInteger) * 1000), "ms"
    ),
}


def _active(op: Any, value: Any) -> Any:
    if value is None:  # "active pr": every user has it
        return User.id.is_not(None)
    if not isinstance(value, bool) or op.value not in ("eq", "ne"):
        raise queries.Untranslatable(value)
    wanted = value if op.value == "eq" else not value
    return User.disabled.is_(not wanted)


def seen(domain_id: int) -> Select:
    return select(User).where(User.domain_id == domain_id, _SEEN)


def find(provisioner: Provisioner, user_id: str, writing: bool = False) -> User:
    """The domain's user ``user_id`` that SCIM sees: else 404, or 403 to a write on a privileged account."""
    number = validation.record_id(user_id)
    user = db.session.get(User, number) if number is not None else None
    if user is None or user.domain_id != provisioner.domain.id or user.scim_deleted_at is not None:
        raise NotFoundException(detail=f"No user {user_id}.")
    if user.privileged:
        if writing:
            raise ForbiddenException(detail="SCIM never modifies a system admin, a domain admin or a service account.")
        raise NotFoundException(detail=f"No user {user_id}.")
    return user


def memberships(user_ids: list[int]) -> dict[int, list[tuple[int, str]]]:
    found: dict[int, list[tuple[int, str]]] = {user_id: [] for user_id in user_ids}
    if not user_ids:
        return found
    rows = db.session.execute(
        select(ScimGroupMember.user_id, ScimGroup.id, ScimGroup.display_name)
        .join(ScimGroup, ScimGroup.id == ScimGroupMember.group_id)
        .where(ScimGroupMember.user_id.in_(user_ids))
        .order_by(ScimGroup.display_name)
    )
    for user_id, group_id, name in rows:
        found[user_id].append((group_id, name))
    return found


def model(user: User, groups: list[tuple[int, str]]) -> ScimUser:
    """``user`` as a SCIM resource (meta.version included)."""
    payload: dict[str, Any] = dict(user.scim_profile or {})
    if user.scim_profile is None:
        # A user SCIM has not written yet: their sign-in address is their e-mail.
        payload["emails"] = [{"value": user.email, "primary": True, "type": "work"}]
    if payload.get("emails"):
        # An address an older rule let in is left out of ``emails`` (whose values are e-mail addresses by
        # scim2-models' schema), not made a 400 for the whole page: every user stays readable and deprovisionable.
        payload["emails"] = [entry for entry in payload["emails"] if _is_address(entry)]
    payload.update(
        {
            "schemas": [str(ScimUser.__schema__)],
            "id": str(user.id),
            "userName": user.email,
            "active": not user.disabled,
        }
    )
    if user.name:
        payload["displayName"] = user.name
    if user.external_id:
        payload["externalId"] = user.external_id
    if groups:
        payload["groups"] = [
            {"value": str(group_id), "display": name, "$ref": _group_url(group_id)} for group_id, name in groups
        ]
    resource: ScimUser = ScimUser.model_validate(payload, scim_policy=protocol.POLICY)
    modified = user.scim_modified_at or user.created_at * 1000
    resource.meta = Meta(
        resource_type="User",
        created=_datetime(user.created_at * 1000),
        last_modified=_datetime(modified),
        location=url_for("scim.get_user", user_id=user.id, _external=True),
    )
    resource.meta.version = protocol.version_of(resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    return resource


def _is_address(entry: Any) -> bool:
    """Whether an ``emails`` entry can be served: an object whose value, if it has one, is an address."""
    if not isinstance(entry, dict):
        return False
    if entry.get("value") is None:
        return True
    try:
        validation.email(str(entry["value"]))
    except validation.Invalid:
        return False
    return True


def _group_url(group_id: int) -> str:
    return url_for("scim.get_group", group_id=group_id, _external=True)


def _datetime(ms: int) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC)


def dump(resource: Any, request: SearchRequest | None = None, ctx: Context = Context.RESOURCE_QUERY_RESPONSE) -> dict:
    return resource.model_dump(scim_ctx=ctx, response_parameters=request)


def read(user: User) -> ScimUser:
    return model(user, memberships([user.id])[user.id])


def _validated(payload: dict[str, Any], ctx: Context) -> ScimUser:
    resource: ScimUser = queries.validated(ScimUser, payload, ctx)
    return resource


def _write(provisioner: Provisioner, user: User, resource: ScimUser, stamp: int, derive_name: bool = True) -> None:
    """Store ``resource`` on ``user``: the sign-in address, name, profile; active false deprovisions.

    ``stamp`` is the write's modification stamp (protocol.claim). The name is ``displayName``; without
    one, create and PUT (``derive_name``) take it from ``name``, while a PATCH that removed it leaves none.
    """
    email = _user_name(resource, user.email)
    if email != user.email:
        taken = db.session.scalar(
            select(User.id).where(User.domain_id == provisioner.domain.id, User.email == email, User.id != user.id)
        )
        if taken is not None:
            raise UniquenessException(detail=f"userName {email} is taken.")
        user.email = email
    name = resource.display_name
    if not name and derive_name and resource.name is not None:
        parts = (resource.name.given_name, resource.name.family_name)
        name = resource.name.formatted or " ".join(part for part in parts if part)
    user.name = (name or "")[:200]
    user.external_id = (resource.external_id or None) and resource.external_id[:255]
    profile = resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    user.scim_profile = {key: value for key, value in profile.items() if key not in _NOT_IN_PROFILE}
    if resource.password and settings().scim_passwords:
        sessions.change_password(user, resource.password, provisioner.actor)
    user.provisioned_by = PROVISIONED_BY
    user.scim_modified_at = stamp
    active = resource.active is not False
    if not active and not user.disabled:
        deprovisioning.deactivate(user, provisioner.actor)
    elif active and user.disabled:
        sessions.enable(user)


def _audit(provisioner: Provisioner, event: str, user: User, **details: Any) -> None:
    audit.record(
        event,
        domain_id=provisioner.domain.id,
        actor=provisioner.actor,
        target=actors.of_user(user.id),
        details={"userName": user.email, **details},
        commit=False,
    )


def _user_name(resource: ScimUser, current: str | None = None) -> str:
    """The sign-in address ``userName`` holds, by the service's one e-mail rule; else 400 invalidValue.

    The ``current`` address is kept as it is even if an older, looser rule let it in.
    """
    if current is not None and (resource.user_name or "").strip().lower() == current:
        return current
    try:
        return validation.email(resource.user_name or "")
    except validation.Invalid:
        raise InvalidValueException(detail="userName must be the user's e-mail address.") from None


def create(provisioner: Provisioner, payload: dict[str, Any]) -> ScimUser:
    resource = _validated(payload, Context.RESOURCE_CREATION_REQUEST)
    # Checked before the row is written: a database refuses an over-long address with a fault, not an answer.
    email = _user_name(resource)
    existing = db.session.scalar(select(User).where(User.domain_id == provisioner.domain.id, User.email == email))
    if existing is not None and (existing.scim_deleted_at is None or existing.privileged):
        # Privileged accounts included: SCIM cannot tell them from any other taken address.
        raise UniquenessException(detail=f"userName {email} is taken.")
    user = existing or User(domain_id=provisioner.domain.id, email=email, name="", groups=[])
    user.scim_deleted_at = None
    if existing is None:
        db.session.add(user)
        db.session.flush()
    _write(provisioner, user, resource, protocol.next_stamp(user.scim_modified_at))
    _audit(provisioner, "scim.user.created", user, revived=existing is not None)
    db.session.commit()
    return read(user)


def _claim(user: User) -> int:
    return protocol.claim(User, User.scim_modified_at, user.id, user.scim_modified_at)


def replace(provisioner: Provisioner, user: User, payload: dict[str, Any]) -> ScimUser:
    protocol.check_if_match(protocol.version(read(user)))
    resource = _validated(payload, Context.RESOURCE_REPLACEMENT_REQUEST)
    _write(provisioner, user, resource, _claim(user))
    _audit(provisioner, "scim.user.replaced", user, active=not user.disabled)
    db.session.commit()
    return read(user)


def patch(provisioner: Provisioner, user: User, payload: dict[str, Any]) -> ScimUser:
    current = read(user)
    protocol.check_if_match(protocol.version(current))
    resource = queries.patched(PatchOp[ScimUser], current, payload)
    _write(provisioner, user, resource, _claim(user), derive_name=False)
    _audit(provisioner, "scim.user.patched", user, active=not user.disabled)
    db.session.commit()
    return read(user)


def delete(provisioner: Provisioner, user: User) -> None:
    protocol.check_if_match(protocol.version(read(user)))
    user.scim_modified_at = _claim(user)
    _audit(provisioner, "scim.user.deleted", user, hard=settings().scim_hard_delete)
    deprovisioning.remove(user, provisioner.actor, hard=settings().scim_hard_delete)
    db.session.commit()


def search(provisioner: Provisioner, request: SearchRequest) -> dict[str, Any]:
    offset, limit = queries.page(request)
    where = queries.condition(request, COLUMNS)
    base = seen(provisioner.domain.id)
    if where is not None:
        total = db.session.scalar(select(func.count()).select_from(base.where(where).subquery()))
        statement = base.where(where).order_by(*_order(request)).offset(offset).limit(limit)
        users = list(db.session.scalars(statement))
        resources = _models(users)
    else:
        everyone = _models(list(db.session.scalars(base.order_by(*_order(request)))))
        matched = queries.matching(request, everyone)
        total, resources = len(matched), matched[offset : offset + limit]
    listing = ListResponse[ScimUser](
        total_results=total, start_index=offset + 1, items_per_page=len(resources), resources=resources
    )
    return listing.model_dump(scim_ctx=Context.SEARCH_RESPONSE, response_parameters=request)


def _models(users: list[User]) -> list[ScimUser]:
    groups = memberships([user.id for user in users])
    return [model(user, groups[user.id]) for user in users]


_SORTABLE = {
    "username": User.email,
    "emails": User.email,
    "emails.value": User.email,
    "externalid": User.external_id,
    "displayname": User.name,
    "meta.created": User.created_at,
    "meta.lastmodified": User.scim_modified_at,
}


def _order(request: SearchRequest) -> list[Any]:
    column: InstrumentedAttribute[Any] = User.id
    if request.sort_by is not None:
        column = _SORTABLE.get(str(request.sort_by).split(":")[-1].lower(), User.id)
    descending = str(request.sort_order or "ascending").endswith("descending")
    return [column.desc() if descending else column.asc(), User.id]
