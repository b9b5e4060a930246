"""``registration-tokens``: initial access tokens for dynamic client registration (RFC 7591)."""

from __future__ import annotations

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc.admin.registration_tokens import DEFAULT_EXPIRES_IN, MAX_EXPIRES_IN, MAX_USES
from authsvc.cli.common import domain_by_host, emit
from authsvc.core import audit
from authsvc.core.database import db, now
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
    domain = domain_by_host(host)
    token, value = RegistrationToken.issue(domain.id, expires_in=expires_in, max_uses=uses, created_by="cli", name=name)
    db.session.add(token)
    audit.record(
        "registration_token.created",
        domain_id=domain.id,
        actor="cli",
        target=f"registration_token:{token.id}",
        details={"after": token.as_json()},
    )
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
    token = db.session.get(RegistrationToken, token_id)
    if token is None:
        raise click.ClickException(f"no registration token {token_id!r}")
    if token.revoked_at is None:
        token.revoked_at = now()
        audit.record(
            "registration_token.revoked",
            domain_id=token.domain_id,
            actor="cli",
            target=f"registration_token:{token.id}",
            commit=False,
        )
    db.session.commit()
    emit(token.as_json())
