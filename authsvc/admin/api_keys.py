"""API keys of a domain's users."""

from __future__ import annotations

from typing import Any

from authsvc.accounts import signin
from authsvc.admin.actors import Actor, audit_change, commit, require_change_of_user
from authsvc.admin.fields import Fields, domain_field
from authsvc.core import validation
from authsvc.core.database import db, now
from authsvc.core.models import API_KEY_PERMISSIONS, ApiKey, Domain, User


def create_api_key(actor: Actor, data: Any) -> tuple[ApiKey, str]:
    fields = Fields(data, partial=False)
    domain = domain_field(actor, fields)
    who = fields.string("user", required=True, max_length=320)
    name = fields.string("name", required=True)
    permission = fields.string("permission", max_length=10) or "user"
    if permission not in API_KEY_PERMISSIONS:
        fields.errors["permission"] = f"must be one of {', '.join(API_KEY_PERMISSIONS)}"
    expires_at = fields.integer("expires_at")
    if expires_at is not None and expires_at <= now():
        fields.errors["expires_at"] = "must be in the future"
    elif expires_at is not None and expires_at > validation.MAX_INTEGER:
        fields.errors["expires_at"] = f"must be at most {validation.MAX_INTEGER} (seconds since the epoch)"
    user = None
    if domain and who:
        user = signin.find_user(domain, who) if "@" in who else _user_by_id(who)
        if user is None or user.domain_id != domain.id:
            fields.errors["user"] = "no such user in the domain"
        else:
            require_change_of_user(actor, user)
    scopes = (
        fields.string("scopes", max_length=2000, rule=lambda v: validation.scopes(v, domain.assignable_scopes))
        if domain
        else None
    )
    if user is not None and not fields.errors:
        try:
            key, value = ApiKey.issue(user, name, scopes or "public", permission, expires_at)
        except ValueError as exc:
            fields.errors["permission"] = str(exc)
    fields.done()
    db.session.add(key)
    db.session.flush()
    audit_change(actor, "api_key.created", domain.id, f"api_key:{key.id}", after=key.as_json())
    commit("that API key")
    return key, value


def _user_by_id(value: str) -> User | None:
    user_id = validation.record_id(value)
    return db.session.get(User, user_id) if user_id is not None else None


def update_api_key(actor: Actor, key: ApiKey, data: Any) -> ApiKey:
    require_change_of_user(actor, key.user)
    before = key.as_json()
    fields = Fields(data, partial=True)
    name = fields.string("name", required=True)
    domain = db.session.get(Domain, key.domain_id)
    scopes = fields.string(
        "scopes", required=True, max_length=2000, rule=lambda v: validation.scopes(v, domain.assignable_scopes)
    )
    permission = fields.string("permission", max_length=10)
    if permission is not None and permission not in API_KEY_PERMISSIONS:
        fields.errors["permission"] = f"must be one of {', '.join(API_KEY_PERMISSIONS)}"
    expires_at = fields.integer("expires_at")
    if expires_at is not None and not 0 <= expires_at <= validation.MAX_INTEGER:
        fields.errors["expires_at"] = f"must be seconds since the epoch, from 0 to {validation.MAX_INTEGER}"
    fields.done()
    for attr, value in (("name", name), ("scopes", scopes), ("permission", permission)):
        if value is not None:
            setattr(key, attr, value)
    if fields.has("expires_at"):
        key.expires_at = expires_at
    audit_change(actor, "api_key.updated", key.domain_id, f"api_key:{key.id}", before, key.as_json())
    db.session.commit()
    return key


def revoke_api_key(actor: Actor, key: ApiKey) -> None:
    require_change_of_user(actor, key.user)
    if key.revoked_at is None:
        key.revoked_at = now()
        audit_change(actor, "api_key.revoked", key.domain_id, f"api_key:{key.id}")
    db.session.commit()
