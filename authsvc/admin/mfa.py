"""Multi-factor sign-in from the admin side: a domain's policy, and resetting a user's factors."""

from __future__ import annotations

from typing import Any

from authsvc.account import notices
from authsvc.admin.actors import Actor, audit_change, require_change, require_change_of_user
from authsvc.admin.schemas import read
from authsvc.auth import sessions
from authsvc.auth.mfa import factors
from authsvc.core import actors
from authsvc.core.database import db
from authsvc.core.models import Domain, User


def set_policy(actor: Actor, domain: Domain, data: Any) -> Domain:
    """``{"require": "off" | "admins" | "all"}``: who of the domain must sign in with a second factor."""
    from authsvc.admin.schemas.domains import MfaPolicy

    require_change(actor, domain.id)
    require = read(MfaPolicy, data).require
    before = {"mfa_require": domain.mfa_require}
    domain.mfa_require = require
    audit_change(actor, "domain.mfa_policy_changed", domain.id, f"domain:{domain.id}", before, {"mfa_require": require})
    db.session.commit()
    return domain


def reset_factors(actor: Actor, user: User) -> int:
    """Remove the user's second factors and recovery codes (a lost phone); their sessions end.

    The user signs in with the password next time and, where the policy asks,
    sets up a new authenticator before getting a session. The user is told by
    e-mail (authsvc.account.notices), with the change.
    """
    require_change_of_user(actor, user)
    removed = factors.reset(user)
    sessions.invalidate_sessions(user)
    audit_change(actor, "mfa.reset", user.domain_id, actors.of_user(user.id), after={"factors_removed": removed})
    notices.factors_reset(db.session.get_one(Domain, user.domain_id), user)
    db.session.commit()
    return removed
