"""Initial access tokens for dynamic client registration (RFC 7591 3): issued by a domain's admins."""

from __future__ import annotations

from typing import Any

from authsvc.admin.actors import Actor, audit_change, commit, require_change
from authsvc.admin.fields import Fields, domain_field
from authsvc.core.database import db, now
from authsvc.core.models import RegistrationToken

DEFAULT_EXPIRES_IN = 24 * 3600
MAX_EXPIRES_IN = 365 * 24 * 3600
MAX_USES = 1000


def create_registration_token(actor: Actor, data: Any) -> tuple[RegistrationToken, str]:
    """A new initial access token of the domain and its value, shown once."""
    fields = Fields(data, partial=False)
    domain = domain_field(actor, fields)
    name = fields.string("name") or ""
    expires_in = fields.integer("expires_in")
    if expires_in is not None and not 60 <= expires_in <= MAX_EXPIRES_IN:
        fields.errors["expires_in"] = f"must be from 60 to {MAX_EXPIRES_IN} seconds"
    max_uses = fields.integer("max_uses")
    if max_uses is not None and not 1 <= max_uses <= MAX_USES:
        fields.errors["max_uses"] = f"must be from 1 to {MAX_USES}"
    fields.done()
    token, value = RegistrationToken.issue(
        domain.id,
        expires_in=expires_in or DEFAULT_EXPIRES_IN,
        max_uses=max_uses or 1,
        created_by=actor.name,
        name=name,
    )
    db.session.add(token)
    db.session.flush()
    audit_change(
        actor, "registration_token.created", domain.id, f"registration_token:{token.id}", after=token.as_json()
    )
    commit("that registration token")
    return token, value


def revoke_registration_token(actor: Actor, token: RegistrationToken) -> None:
    """No further registration with it; the applications it registered stay."""
    require_change(actor, token.domain_id)
    if token.revoked_at is None:
        token.revoked_at = now()
        audit_change(actor, "registration_token.revoked", token.domain_id, f"registration_token:{token.id}")
    db.session.commit()
