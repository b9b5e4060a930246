"""SCIM Groups (RFC 7643 4.2): a domain's groups of its users; a member's groups are their roles (``u.r``).

Members are users SCIM sees (not privileged accounts or service accounts) of the
same domain; any other id is 400 ``invalidValue`` and nothing is stored. Each
change of membership or name rewrites the members' ``groups``, the roles that
inspect and ID tokens carry, as SAML and LDAP sign-ins do with their groups.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask import url_for
from scim2_models import (
    Context,
    InvalidValueException,
    ListResponse,
    Meta,
    NotFoundException,
    PatchOp,
    SearchRequest,
    UniquenessException,
)
from scim2_models import Group as ScimGroupResource
from scim2_models.path import CompareOperator
from sqlalchemy import delete, exists, false, func, select

from authsvc.core import audit, validation
from authsvc.core.database import db
from authsvc.core.models import ScimGroup, ScimGroupMember, User
from authsvc.scim import protocol, queries
from authsvc.scim.auth import Provisioner


def _member_is(op: CompareOperator, value: Any) -> Any:
    if value is None:  # "members pr"
        return exists().where(ScimGroupMember.group_id == ScimGroup.id)
    if op != CompareOperator.eq:
        raise queries.Untranslatable(value)
    user_id = validation.record_id(str(value))
    if user_id is None:  # no user has it
        return false()
    return exists().where(ScimGroupMember.group_id == ScimGroup.id, ScimGroupMember.user_id == user_id)


COLUMNS = {
    "displayname": queries.Column(func.lower(ScimGroup.display_name), "text"),
    "externalid": queries.Column(ScimGroup.external_id, "exact"),
    "id": queries.Column(ScimGroup.id, "id"),
    "members": queries.Column(None, "custom", _member_is),
    "members.value": queries.Column(None, "custom", _member_is),
    "meta.created": queries.Column(ScimGroup.created_at, "seconds"),
    "meta.lastmodified": queries.Column(ScimGroup.modified_at, "ms"),
}


def find(provisioner: Provisioner, group_id: str) -> ScimGroup:
    number = validation.record_id(group_id)
    group = db.session.get(ScimGroup, number) if number is not None else None
    if group is None or group.domain_id != provisioner.domain.id:
        raise NotFoundException(detail=f"No group {group_id}.")
    return group


def _members(group_ids: list[int]) -> dict[int, list[tuple[int, str]]]:
    found: dict[int, list[tuple[int, str]]] = {group_id: [] for group_id in group_ids}
    if group_ids:
        rows = db.session.execute(
            select(ScimGroupMember.group_id, User.id, func.coalesce(ScimGroupMember.display, User.email))
            .join(User, User.id == ScimGroupMember.user_id)
            .where(ScimGroupMember.group_id.in_(group_ids))
            .order_by(User.id)
        )
        for group_id, user_id, email in rows:
            found[group_id].append((user_id, email))
    return found


def model(group: ScimGroup, members: list[tuple[int, str]]) -> ScimGroupResource:
    payload: dict[str, Any] = {
        "schemas": [str(ScimGroupResource.__schema__)],
        "id": str(group.id),
        "displayName": group.display_name,
    }
    if group.external_id:
        payload["externalId"] = group.external_id
    if members:
        payload["members"] = [
            {
                "value": str(user_id),
                "display": email,
                "type": "User",
                "$ref": url_for("scim.get_user", user_id=user_id, _external=True),
            }
            for user_id, email in members
        ]
    resource = ScimGroupResource.model_validate(payload, scim_policy=protocol.POLICY)
    resource.meta = Meta(
        resource_type="Group",
        created=datetime.fromtimestamp(group.created_at, UTC),
        last_modified=datetime.fromtimestamp(group.modified_at / 1000, UTC),
        location=url_for("scim.get_group", group_id=group.id, _external=True),
    )
    resource.meta.version = protocol.version_of(resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    return resource


def read(group: ScimGroup) -> ScimGroupResource:
    return model(group, _members([group.id])[group.id])


def _validated(payload: dict[str, Any], ctx: Context) -> ScimGroupResource:
    resource: ScimGroupResource = queries.validated(ScimGroupResource, payload, ctx)
    return resource


def _group_names(user_ids: set[int]) -> dict[int, list[str]]:
    names: dict[int, list[str]] = {user_id: [] for user_id in user_ids}
    if user_ids:
        rows = db.session.execute(
            select(ScimGroupMember.user_id, ScimGroup.display_name)
            .join(ScimGroup, ScimGroup.id == ScimGroupMember.group_id)
            .where(ScimGroupMember.user_id.in_(user_ids))
        )
        for user_id, name in rows:
            names[user_id].append(name)
    return names


def _resync_roles(before: dict[int, list[str]]) -> None:
    """Rewrite the roles of the users in ``before`` (their SCIM groups' names then): old names out, current in."""
    db.session.flush()
    after = _group_names(set(before))
    for user_id, old in before.items():
        user = db.session.get(User, user_id)
        if user is None:
            continue
        kept = [name for name in (user.groups or []) if name not in old]
        user.groups = kept + [name for name in sorted(after[user_id]) if name not in kept]


def _write(provisioner: Provisioner, group: ScimGroup, resource: ScimGroupResource, stamp: int) -> None:
    """Store ``resource`` on ``group`` (``stamp``: the write's modification stamp, protocol.claim)."""
    name = (resource.display_name or "").strip()
    if not name or len(name) > 255:
        raise InvalidValueException(detail="displayName is required (at most 255 characters).")
    taken = db.session.scalar(
        select(ScimGroup.id).where(
            ScimGroup.domain_id == provisioner.domain.id, ScimGroup.display_name == name, ScimGroup.id != group.id
        )
    )
    if taken is not None:
        raise UniquenessException(detail=f"displayName {name} is taken.")
    displays: dict[int, str | None] = {}
    for member in resource.members or []:
        user_id = validation.record_id(str(member.value or ""))
        if user_id is None:
            raise InvalidValueException(detail=f"Member {member.value!r} is not a user of this domain.")
        displays[user_id] = (member.display or None) and member.display[:255]
    wanted = set(displays)
    current = set(db.session.scalars(select(ScimGroupMember.user_id).where(ScimGroupMember.group_id == group.id)))
    # Members being added must be users SCIM sees; those already in stay (one promoted since is left alone).
    added = wanted - current
    if added:
        found = set(
            db.session.scalars(
                select(User.id).where(
                    User.id.in_(added),
                    User.domain_id == provisioner.domain.id,
                    User.system_admin.is_(False),
                    User.admin.is_(False),
                    User.support.is_(False),
                    User.service_account.is_(False),
                    User.scim_deleted_at.is_(None),
                )
            )
        )
        missing = sorted(added - found)
        if missing:
            raise InvalidValueException(detail=f"Member {missing[0]} is not a user of this domain.")
    affected = current | wanted if name != group.display_name else current ^ wanted
    before = _group_names(affected)
    group.display_name = name
    group.external_id = (resource.external_id or None) and resource.external_id[:255]
    group.modified_at = stamp
    for user_id in current - wanted:
        db.session.execute(
            delete(ScimGroupMember).where(ScimGroupMember.group_id == group.id, ScimGroupMember.user_id == user_id)
        )
    for user_id in wanted - current:
        db.session.add(ScimGroupMember(group_id=group.id, user_id=user_id, display=displays[user_id]))
    for user_id in wanted & current:
        row = db.session.get(ScimGroupMember, (group.id, user_id))
        if row is not None and displays[user_id] and row.display != displays[user_id]:
            row.display = displays[user_id]
    _resync_roles(before)


def _audit(provisioner: Provisioner, event: str, group: ScimGroup, **details: Any) -> None:
    audit.record(
        event,
        domain_id=provisioner.domain.id,
        actor=provisioner.actor,
        target=f"group:{group.id}",
        details={"displayName": group.display_name, **details},
        commit=False,
    )


def create(provisioner: Provisioner, payload: dict[str, Any]) -> ScimGroupResource:
    resource = _validated(payload, Context.RESOURCE_CREATION_REQUEST)
    stamp = protocol.next_stamp(None)
    group = ScimGroup(domain_id=provisioner.domain.id, display_name="", modified_at=stamp)
    db.session.add(group)
    db.session.flush()
    _write(provisioner, group, resource, stamp)
    _audit(provisioner, "scim.group.created", group)
    db.session.commit()
    return read(group)


def _claim(group: ScimGroup) -> int:
    return protocol.claim(ScimGroup, ScimGroup.modified_at, group.id, group.modified_at)


def replace(provisioner: Provisioner, group: ScimGroup, payload: dict[str, Any]) -> ScimGroupResource:
    protocol.check_if_match(protocol.version(read(group)))
    resource = _validated(payload, Context.RESOURCE_REPLACEMENT_REQUEST)
    _write(provisioner, group, resource, _claim(group))
    _audit(provisioner, "scim.group.replaced", group)
    db.session.commit()
    return read(group)


def patch(provisioner: Provisioner, group: ScimGroup, payload: dict[str, Any]) -> ScimGroupResource:
    current = read(group)
    protocol.check_if_match(protocol.version(current))
    resource = queries.patched(PatchOp[ScimGroupResource], current, payload)
    _write(provisioner, group, resource, _claim(group))
    _audit(provisioner, "scim.group.patched", group)
    db.session.commit()
    return read(group)


def delete_group(provisioner: Provisioner, group: ScimGroup) -> None:
    protocol.check_if_match(protocol.version(read(group)))
    _claim(group)
    members = set(db.session.scalars(select(ScimGroupMember.user_id).where(ScimGroupMember.group_id == group.id)))
    before = _group_names(members)
    _audit(provisioner, "scim.group.deleted", group)
    db.session.execute(delete(ScimGroupMember).where(ScimGroupMember.group_id == group.id))
    db.session.delete(group)
    _resync_roles(before)
    db.session.commit()


def leave_all(user: User) -> None:
    """Take ``user`` out of every group (SCIM's DELETE of the user); the caller commits."""
    before = _group_names({user.id})
    db.session.execute(delete(ScimGroupMember).where(ScimGroupMember.user_id == user.id))
    _resync_roles(before)


def search(provisioner: Provisioner, request: SearchRequest) -> dict[str, Any]:
    offset, limit = queries.page(request)
    where = queries.condition(request, COLUMNS)
    base = select(ScimGroup).where(ScimGroup.domain_id == provisioner.domain.id)
    descending = str(request.sort_order or "ascending").endswith("descending")
    order = ScimGroup.display_name if request.sort_by is not None else ScimGroup.id
    ordering = [order.desc() if descending else order.asc(), ScimGroup.id]
    if where is not None:
        total = db.session.scalar(select(func.count()).select_from(base.where(where).subquery()))
        chosen = list(db.session.scalars(base.where(where).order_by(*ordering).offset(offset).limit(limit)))
        members = _members([group.id for group in chosen])
        resources = [model(group, members[group.id]) for group in chosen]
    else:
        every = list(db.session.scalars(base.order_by(*ordering)))
        members = _members([group.id for group in every])
        matched = queries.matching(request, [model(group, members[group.id]) for group in every])
        total, resources = len(matched), matched[offset : offset + limit]
    listing = ListResponse[ScimGroupResource](
        total_results=total, start_index=offset + 1, items_per_page=len(resources), resources=resources
    )
    return listing.model_dump(scim_ctx=Context.SEARCH_RESPONSE, response_parameters=request)
