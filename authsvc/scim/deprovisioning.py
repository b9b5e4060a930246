"""Deprovisioning: what ``active: false`` and DELETE do to a user, at once.

The user is disabled (every sign-in method refuses a disabled account), every
session ends (applications signed in through them get back-channel logouts once
the caller commits: authsvc.auth.sessions), every token and API key is
revoked. DELETE also unlinks the user from SSO, SAML and LDAP identities and
from groups, and hides them from SCIM; the row stays for the audit trail unless
AUTHSVC_SCIM_HARD_DELETE is set.
"""

from __future__ import annotations

from sqlalchemy import delete

from authsvc.auth import sessions
from authsvc.core import actors, audit, clock, dependents
from authsvc.core.database import db
from authsvc.core.models import (
    ExternalIdentity,
    LdapAccount,
    User,
)
from authsvc.tokens import api_keys, revocation


def deactivate(user: User, actor: str) -> None:
    """Disable ``user`` and end everything they hold; the caller commits (and the logouts go then)."""
    tokens = sessions.disable(user, actor)
    keys = api_keys.revoke_of_user(user.id)
    audit.record(
        "scim.user.deactivated",
        domain_id=user.domain_id,
        actor=actor,
        target=actors.of_user(user.id),
        details={"revoked_tokens": tokens, "revoked_api_keys": keys},
        commit=False,
    )


def remove(user: User, actor: str, hard: bool) -> None:
    """SCIM's DELETE: deactivate, unlink, leave groups; then hide the row, or delete it when ``hard``."""
    from authsvc.scim import groups

    if not user.disabled:
        deactivate(user, actor)
    groups.leave_all(user)
    db.session.execute(delete(ExternalIdentity).where(ExternalIdentity.user_id == user.id))
    db.session.execute(delete(LdapAccount).where(LdapAccount.user_id == user.id))
    if not hard:
        user.scim_deleted_at = clock.now()
        return
    revocation.delete_of_users(user.id)
    api_keys.delete_of_user(user.id)
    dependents.delete_referrers("user", user.id)
    db.session.delete(user)
