"""``users`` and ``api-keys``: people, service accounts and their long-lived keys."""

from __future__ import annotations

from typing import Any

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc.accounts import sessions
from authsvc.cli.common import (
    RESERVED_SCOPES_HELP,
    check_password,
    commit_or_fail,
    domain_by_host,
    emit,
    user_by_email,
    validate_email,
    validate_scopes,
)
from authsvc.core.database import db, now
from authsvc.core.models import API_KEY_PERMISSIONS, ApiKey, User

users = AppGroup("users", help="Users of a domain.")
api_keys = AppGroup("api-keys", help="API keys of a user.")


@users.command("create")
@click.option("--domain", "host", required=True)
@click.option("--email", required=True)
@click.option("--password", required=True)
@click.option("--name", default="")
@click.option("--service-account", is_flag=True, help="May use the password grant.")
@click.option("--admin", is_flag=True)
@click.option("--support", is_flag=True)
@click.option("--system-admin", is_flag=True, help="Administers every domain (with --admin).")
def create_user(
    host: str,
    email: str,
    password: str,
    name: str,
    service_account: bool,
    admin: bool,
    support: bool,
    system_admin: bool,
) -> None:
    domain = domain_by_host(host)
    email = validate_email(email)
    check_password(password)
    if db.session.scalar(select(User.id).where(User.domain_id == domain.id, User.email == email)):
        raise click.ClickException(f"a user with e-mail {email!r} already exists in {domain.host}")
    user = User(
        domain_id=domain.id,
        email=email,
        name=name,
        service_account=service_account,
        admin=admin or system_admin,
        support=support,
        system_admin=system_admin,
    )
    user.set_password(password)
    db.session.add(user)
    commit_or_fail(f"a user with e-mail {email!r}")
    emit({"id": str(user.id), "email": user.email})


@users.command("list")
@click.option("--domain", "host", help="Only this domain's users.")
def list_users(host: str | None) -> None:
    query = select(User).order_by(User.id)
    if host:
        query = query.where(User.domain_id == domain_by_host(host).id)
    emit({"users": [u.as_json() for u in db.session.scalars(query)]})


def _user_command(name: str, help_text: str) -> Any:
    """A ``users`` command that acts on one user, named by domain and e-mail."""

    def decorate(func: Any) -> Any:
        func = click.option("--email", required=True)(func)
        func = click.option("--domain", "host", required=True)(func)
        return users.command(name, help=help_text)(func)

    return decorate


@_user_command("set-password", "Set a user's password; ends the user's sessions and revokes their tokens.")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
def set_password(host: str, email: str, password: str) -> None:
    user = user_by_email(host, email)
    revoked = sessions.change_password(user, check_password(password))
    db.session.commit()
    emit({"id": str(user.id), "email": user.email, "revoked_tokens": revoked})


@_user_command("disable", "Disable a user; ends the user's sessions and revokes their tokens.")
def disable_user(host: str, email: str) -> None:
    user = user_by_email(host, email)
    revoked = sessions.disable(user)
    db.session.commit()
    emit({"id": str(user.id), "email": user.email, "disabled": True, "revoked_tokens": revoked})


@_user_command("enable", "Enable a user again; tokens revoked by the disable stay revoked.")
def enable_user(host: str, email: str) -> None:
    user = user_by_email(host, email)
    user.disabled = False
    db.session.commit()
    emit({"id": str(user.id), "email": user.email, "disabled": False})


@api_keys.command("create")
@click.option("--domain", "host", required=True)
@click.option("--user", "email", required=True, help="The e-mail of the key's user.")
@click.option("--name", required=True)
@click.option("--scopes", default="public", show_default=True, help=RESERVED_SCOPES_HELP)
@click.option("--permission", type=click.Choice(API_KEY_PERMISSIONS), default="user", show_default=True)
@click.option("--expires-in-days", type=click.IntRange(min=1), help="Default: the key does not expire.")
def create_api_key(host: str, email: str, name: str, scopes: str, permission: str, expires_in_days: int | None) -> None:
    domain = domain_by_host(host)
    user = user_by_email(host, email)
    try:
        key, value = ApiKey.issue(
            user,
            name,
            validate_scopes(scopes, domain.assignable_scopes),
            permission,
            now() + expires_in_days * 86400 if expires_in_days else None,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    db.session.add(key)
    commit_or_fail("that API key")
    emit({"id": key.id, "key": value})


@api_keys.command("list")
@click.option("--domain", "host", help="Only this domain's keys.")
def list_api_keys(host: str | None) -> None:
    query = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if host:
        query = query.where(ApiKey.domain_id == domain_by_host(host).id)
    emit({"api_keys": [k.as_json() for k in db.session.scalars(query)]})


@api_keys.command("revoke")
@click.argument("key_id")
def revoke_api_key(key_id: str) -> None:
    """Revoke a key; it fails from its next use on, on every worker."""
    key = db.session.get(ApiKey, key_id)
    if key is None:
        raise click.ClickException(f"no API key with id {key_id!r}")
    if key.revoked_at is None:
        key.revoked_at = now()
        db.session.commit()
    emit({"id": key.id, "revoked": True, "revoked_at": key.revoked_at})
