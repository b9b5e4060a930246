"""``mfa``: a domain's multi-factor sign-in policy, and resetting a user's factors."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from authsvc.accounts import sessions
from authsvc.accounts.mfa import factors
from authsvc.admin.mfa import POLICIES
from authsvc.cli.common import domain_by_host, emit, user_by_email
from authsvc.core import audit
from authsvc.core.database import db

mfa = AppGroup("mfa", help="Multi-factor sign-in: who must use a second factor, and resets.")


@mfa.command("policy")
@click.option("--domain", "host", required=True)
@click.option("--require", type=click.Choice(POLICIES), required=True, help="Who must sign in with a second factor.")
def policy(host: str, require: str) -> None:
    """Set who of the domain must sign in with a second factor (service accounts are exempt)."""
    domain = domain_by_host(host)
    before = domain.mfa_require
    domain.mfa_require = require
    details = {"before": {"mfa_require": before}, "after": {"mfa_require": require}}
    audit.record(
        "domain.mfa_policy_changed", domain_id=domain.id, actor="cli", target=f"domain:{domain.id}", details=details
    )
    emit({"domain": domain.host, "require": domain.mfa_require})


@mfa.command("reset")
@click.option("--domain", "host", required=True)
@click.option("--email", required=True)
def reset(host: str, email: str) -> None:
    """Remove a user's second factors and recovery codes (a lost phone); their sessions end."""
    user = user_by_email(host, email)
    removed = factors.reset(user)
    sessions.invalidate_sessions(user)
    audit.record(
        "mfa.reset",
        domain_id=user.domain_id,
        actor="cli",
        target=f"user:{user.id}",
        details={"after": {"factors_removed": removed}},
        commit=False,
    )
    db.session.commit()
    emit({"id": str(user.id), "factors_removed": removed})
