"""API keys: issued, listed, noted used, revoked and deleted here; inspect's read of them is ``presented``.

A key is presented as ``<id>.<secret>``; only the secret's digest is stored
(authsvc.core.security). Callers: the admin verbs (authsvc.admin.api_keys; a domain's scopes in
use, authsvc.admin.domains), ``api-keys list``
(authsvc.cli.users), inspect (authsvc.api.credentials, which notes a use),
SCIM's deprovisioning and the deletion of a user or a domain. Nothing here
commits but ``note_use``: the caller's audit record goes with its commit.
"""

from __future__ import annotations

import secrets

from sqlalchemy import delete, or_, select, update

from authsvc.core import security
from authsvc.core.database import db, now, rows_affected
from authsvc.core.models import ApiKey, User


class NotAllowed(ValueError):
    """The user may not hold a key of the permission asked for."""


def issue(
    user: User, name: str, scopes: str, permission: str = "user", expires_at: int | None = None
) -> tuple[ApiKey, str]:
    """A new key for ``user``, added to the session, and the value shown once, ``<id>.<secret>``."""
    if permission == "admin" and not user.admin:
        raise NotAllowed(f"{user.email} is not an admin; an admin key needs one")
    if permission == "support" and not (user.admin or user.support):
        raise NotAllowed(f"{user.email} is neither support nor admin; a support key needs one")
    secret = security.new_secret()
    key = ApiKey(
        id=secrets.token_hex(8),
        domain_id=user.domain_id,
        user_id=user.id,
        name=name,
        secret_digest=security.digest(secret),
        scopes=scopes,
        permission=permission,
        expires_at=expires_at,
    )
    db.session.add(key)
    return key, f"{key.id}.{secret}"


def listed(domain_id: int | None = None) -> list[ApiKey]:
    """Every key (only ``domain_id``'s, if given), oldest first; revoked and expired ones included."""
    query = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if domain_id is not None:
        query = query.where(ApiKey.domain_id == domain_id)
    return list(db.session.scalars(query))


def live_of_domain(domain_id: int) -> list[ApiKey]:
    """The domain's keys not revoked (expired ones included): what still holds its scopes."""
    return list(db.session.scalars(select(ApiKey).where(ApiKey.domain_id == domain_id, ApiKey.revoked_at.is_(None))))


def revoke(key: ApiKey) -> bool:
    """Revoke ``key``; False if it was revoked already."""
    if key.revoked_at is not None:
        return False
    key.revoked_at = now()
    return True


def revoke_of_user(user_id: int) -> int:
    """Revoke every live key of ``user_id``; how many there were."""
    return rows_affected(
        db.session.execute(
            update(ApiKey)
            .where(ApiKey.user_id == user_id, ApiKey.revoked_at.is_(None))
            .values(revoked_at=now())
            .execution_options(synchronize_session=False)
        )
    )


def note_use(key_id: str, stale: int, moment: int) -> None:
    """Note key ``key_id`` used at ``moment`` unless a use after ``stale`` was noted; committed.

    The UPDATE's own condition settles a race between workers: at most one of them writes.
    """
    db.session.execute(
        update(ApiKey)
        .where(ApiKey.id == key_id, or_(ApiKey.last_used_at.is_(None), ApiKey.last_used_at <= stale))
        .values(last_used_at=moment)
    )
    db.session.commit()


def delete_of_user(user_id: int) -> None:
    """Delete the keys of a user being deleted."""
    db.session.execute(delete(ApiKey).where(ApiKey.user_id == user_id))


def delete_of_domain(domain_id: int) -> None:
    """Delete the keys of a domain being deleted."""
    db.session.execute(delete(ApiKey).where(ApiKey.domain_id == domain_id))
