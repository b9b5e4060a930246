"""``registration-tokens``: initial access tokens for dynamic client registration (RFC 7591)."""

from __future__ import annotations

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc import admin
from authsvc.admin.schemas.choices import DEFAULT_EXPIRES_IN, MAX_EXPIRES_IN, MAX_USES
from authsvc.cli.common import admin_rules, domain_by_host, emit, record_named
from authsvc.core.database import db
from authsvc.core.models import RegistrationToken

registration_tokens = AppGroup(
    "registration-tokens", help="Initial access tokens: each lets its holder register applications (RFC 7591)."
)


@registration_tokens.command("create")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option(
    "--expires-in",
    type=click.IntRange(min=60, max=MAX_EXPIRES_IN),
    default=DEFAULT_EXPIRES_IN,
    show_default=True,
    help="Seconds until the token expires.",
)
@click.option(
    "--uses", type=click.IntRange(min=1, max=MAX_USES), default=1, show_default=True, help="Registrations it allows."
)
@click.option("--name", default="", help="What it is for, shown in the console.")
def create_registration_token(host: str, expires_in: int, uses: int, name: str) -> None:
    """Issue an initial access token; its value is printed only now."""
    data = {"domain": str(domain_by_host(host).id), "expires_in": expires_in, "max_uses": uses, "name": name}
    with admin_rules({"max_uses": "--uses"}):
        token, value = admin.create_registration_token(admin.command_line(), data)
    emit({"id": token.id, "token": value, "expires_at": token.expires_at, "max_uses": token.max_uses})


@registration_tokens.command("list")
@click.option("--domain", "host", required=True)
def list_registration_tokens(host: str) -> None:
    """The domain's initial access tokens, newest first (never their values)."""
    query = (
        select(RegistrationToken)
        .where(RegistrationToken.domain_id == domain_by_host(host).id)
        .order_by(RegistrationToken.created_at.desc())
    )
    emit({"registration_tokens": [t.as_json() for t in db.session.scalars(query)]})


@registration_tokens.command("revoke")
@click.argument("token_id")
def revoke_registration_token(token_id: str) -> None:
    """Revoke a token: no further registration with it; the applications it registered stay."""
    token = record_named(RegistrationToken, token_id, "registration token")
    with admin_rules():
        admin.revoke_registration_token(admin.command_line(), token)
    emit(token.as_json())
