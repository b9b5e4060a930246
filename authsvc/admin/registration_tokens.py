"""Initial access tokens for dynamic client registration (RFC 7591 3): issued by a domain's admins."""

from __future__ import annotations

from typing import Any

from authsvc.admin.actors import Actor, audit_change, require_change, save_new
from authsvc.admin.schemas import read, target_domain
from authsvc.core.database import db, now
from authsvc.core.models import RegistrationToken


def create_registration_token(actor: Actor, data: Any) -> tuple[RegistrationToken, str]:
    """A new initial access token of the domain and its value, shown once."""
    from authsvc.admin.schemas.registration_tokens import RegistrationTokenCreate

    domain = target_domain(actor, data)
    values = read(RegistrationTokenCreate, data)
    token, value = RegistrationToken.issue(
        domain.id,
        expires_in=values.expires_in,
        max_uses=values.max_uses,
        created_by=actor.name,
        name=values.name or "",
    )
    save_new(actor, token, "registration_token", domain.id, "that registration token")
    return token, value


def revoke_registration_token(actor: Actor, token: RegistrationToken) -> None:
    """No further registration with it; the applications it registered stay."""
    require_change(actor, token.domain_id)
    if token.revoked_at is None:
        token.revoked_at = now()
        audit_change(actor, "registration_token.revoked", token.domain_id, f"registration_token:{token.id}")
    db.session.commit()
