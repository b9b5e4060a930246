"""API keys of a domain's users."""

from __future__ import annotations

from typing import Any

from authsvc.admin.actors import Actor, audit_change, require_change_of_user, save_change, save_new
from authsvc.admin.schemas import read, target_domain
from authsvc.auth import signin
from authsvc.core import actors, validation
from authsvc.core.database import db, now
from authsvc.core.errors import ValidationFailed
from authsvc.core.models import ApiKey, Domain, User
from authsvc.tokens import api_keys


def create_api_key(actor: Actor, data: Any) -> tuple[ApiKey, str]:
    from authsvc.admin.schemas.api_keys import ApiKeyCreate

    domain = target_domain(actor, data)
    values = read(ApiKeyCreate, data, domain=domain)
    if values.expires_at is not None and values.expires_at <= now():
        raise ValidationFailed({"expires_at": "must be in the future"})
    who = values.user
    user = signin.find_user(domain, who) if "@" in who else _user_by_id(who)
    if user is None or user.domain_id != domain.id:
        raise ValidationFailed({"user": "no such user in the domain"})
    require_change_of_user(actor, user)
    if "scim" in (values.scopes or "").split() and not user.admin:
        # SCIM provisioning acts with a domain admin's rights (docs/scim.md).
        raise ValidationFailed({"scopes": "the scim scope is only for a key of a domain admin"})
    try:
        key, value = api_keys.issue(
            user, values.name, values.scopes or "public", values.permission or "user", values.expires_at
        )
    except ValueError as exc:
        raise ValidationFailed({"permission": str(exc)}) from None
    save_new(actor, key, "api_key", domain.id, "that API key")
    return key, value


def _user_by_id(value: str) -> User | None:
    user_id = validation.record_id(value)
    return db.session.get(User, user_id) if user_id is not None else None


def update_api_key(actor: Actor, key: ApiKey, data: Any) -> ApiKey:
    from authsvc.admin.schemas.api_keys import ApiKeyChange

    require_change_of_user(actor, key.user)
    before = key.as_json()
    domain = db.session.get(Domain, key.domain_id)
    save_change(actor, key, "api_key", before, read(ApiKeyChange, data, domain=domain).given())
    return key


def revoke_api_key(actor: Actor, key: ApiKey) -> None:
    require_change_of_user(actor, key.user)
    if api_keys.revoke(key):
        audit_change(actor, "api_key.revoked", key.domain_id, actors.of_api_key(key.id))
    db.session.commit()
