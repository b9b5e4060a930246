"""``mfa``: a domain's multi-factor sign-in policy, and resetting a user's factors."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from authsvc import admin
from authsvc.admin.actors import command_line
from authsvc.admin.schemas.choices import POLICIES
from authsvc.cli.common import admin_rules, domain_by_host, emit, user_by_email

mfa = AppGroup("mfa", help="Multi-factor sign-in: who must use a second factor, and resets.")


@mfa.command("policy")
@click.option("--domain", "host", required=True)
@click.option("--require", type=click.Choice(POLICIES), required=True, help="Who must sign in with a second factor.")
def policy(host: str, require: str) -> None:
    """Set who of the domain must sign in with a second factor (service accounts are exempt)."""
    with admin_rules():
        domain = admin.set_policy(command_line(), domain_by_host(host), {"require": require})
    emit({"domain": domain.host, "require": domain.mfa_require})


@mfa.command("reset")
@click.option("--domain", "host", required=True)
@click.option("--email", required=True)
def reset(host: str, email: str) -> None:
    """Remove a user's second factors and recovery codes (a lost phone); their sessions end."""
    user = user_by_email(host, email)
    with admin_rules():
        removed = admin.reset_factors(command_line(), user)
    emit({"id": str(user.id), "factors_removed": removed})
