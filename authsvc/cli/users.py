"""``users`` and ``api-keys``: people, service accounts and their long-lived keys."""

from __future__ import annotations

from typing import Any

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc import admin
from authsvc.admin import invitations
from authsvc.cli.common import RESERVED_SCOPES_HELP, admin_rules, domain_by_host, emit, record_named, user_by_email
from authsvc.core.database import db, now
from authsvc.core.models import API_KEY_PERMISSIONS, ApiKey, User
from authsvc.tokens import api_keys as tokens_api_keys

users = AppGroup("users", help="Users of a domain.")
api_keys = AppGroup("api-keys", help="API keys of a user.")


@users.command("create")
@click.option("--domain", "host", required=True)
@click.option("--email", required=True)
@click.option("--password", required=True)
@click.option("--name", default="")
@click.option("--service-account", is_flag=True, help="May use the password grant.")
@click.option("--admin", "is_admin", is_flag=True)
@click.option("--support", is_flag=True)
@click.option("--system-admin", is_flag=True, help="Administers every domain (with --admin).")
def create_user(
    host: str,
    email: str,
    password: str,
    name: str,
    service_account: bool,
    is_admin: bool,
    support: bool,
    system_admin: bool,
) -> None:
    if system_admin and service_account:
        # Its password grant and any application bound to it would act as a system admin of every domain.
        raise click.UsageError(
            "--system-admin and --service-account cannot go together: a system admin cannot be a service account"
        )
    data = {
        "domain": str(domain_by_host(host).id),
        "email": email,
        "password": password,
        "name": name,
        "service_account": service_account,
        "admin": is_admin or system_admin,
        "support": support,
        "system_admin": system_admin,
    }
    with admin_rules():
        user = admin.create_user(admin.command_line(), data)
    emit({"id": str(user.id), "email": user.email})


@users.command("invite")
@click.option("--domain", "host", required=True)
@click.option("--email", required=True)
@click.option("--name", default="")
@click.option("--admin", "is_admin", is_flag=True, help="An admin of the domain once accepted.")
@click.option("--support", is_flag=True, help="A support user of the domain once accepted.")
def invite_user(host: str, email: str, name: str, is_admin: bool, support: bool) -> None:
    """Invite a person by e-mail: a single-use link to set a password or passkey (docs/account.md#invitations).

    The link is printed only when this service cannot send e-mail; hand it to the person then.
    """
    if is_admin and support:
        raise click.UsageError("--admin and --support cannot go together: an invitation gives one role")
    domain = domain_by_host(host)
    role = "admin" if is_admin else "support" if support else "user"
    with admin_rules():
        sent = invitations.invite(admin.command_line(), domain, {"email": email, "name": name, "role": role})
    found = sent.invitation
    emit(
        {"id": found.id, "email": found.email, "expires_at": found.expires_at}
        | ({"link": sent.link} if sent.link else {})
    )


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


def _change(user: User, data: dict[str, Any]) -> tuple[User, int]:
    """Change ``user`` as the admin API's update does; how many tokens it revoked."""
    with admin_rules():
        return admin.update_user_counting_revoked(admin.command_line(), user, data)


@_user_command("set-password", "Set a user's password; ends the user's sessions and revokes their tokens.")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
def set_password(host: str, email: str, password: str) -> None:
    user, revoked = _change(user_by_email(host, email), {"password": password})
    emit({"id": str(user.id), "email": user.email, "revoked_tokens": revoked})


@_user_command("disable", "Disable a user; ends the user's sessions and revokes their tokens.")
def disable_user(host: str, email: str) -> None:
    user, revoked = _change(user_by_email(host, email), {"disabled": True})
    emit({"id": str(user.id), "email": user.email, "disabled": True, "revoked_tokens": revoked})


@_user_command("enable", "Enable a user again; tokens revoked by the disable stay revoked.")
def enable_user(host: str, email: str) -> None:
    user, _ = _change(user_by_email(host, email), {"disabled": False})
    emit({"id": str(user.id), "email": user.email, "disabled": False})


@api_keys.command("create")
@click.option("--domain", "host", required=True)
@click.option("--user", "email", required=True, help="The e-mail of the key's user.")
@click.option("--name", required=True)
@click.option("--scopes", default="public", show_default=True, help=RESERVED_SCOPES_HELP)
@click.option("--permission", type=click.Choice(API_KEY_PERMISSIONS), default="user", show_default=True)
@click.option("--expires-in-days", type=click.IntRange(min=1), help="Default: the key does not expire.")
def create_api_key(host: str, email: str, name: str, scopes: str, permission: str, expires_in_days: int | None) -> None:
    data: dict[str, Any] = {
        "domain": str(domain_by_host(host).id),
        # The option takes an e-mail; the key's user is found by it here, with the command line's message.
        "user": str(user_by_email(host, email).id),
        "name": name,
        "scopes": scopes,
        "permission": permission,
    }
    if expires_in_days:
        data["expires_at"] = now() + expires_in_days * 86400
    with admin_rules({"expires_at": "--expires-in-days"}):
        key, value = admin.create_api_key(admin.command_line(), data)
    emit({"id": key.id, "key": value})


@api_keys.command("list")
@click.option("--domain", "host", help="Only this domain's keys.")
def list_api_keys(host: str | None) -> None:
    keys = tokens_api_keys.listed(domain_by_host(host).id if host else None)
    emit({"api_keys": [k.as_json() for k in keys]})


@api_keys.command("revoke")
@click.argument("key_id")
def revoke_api_key(key_id: str) -> None:
    """Revoke a key; it fails from its next use on, on every worker."""
    key = record_named(ApiKey, key_id, "API key")
    with admin_rules():
        admin.revoke_api_key(admin.command_line(), key)
    emit({"id": key.id, "revoked": True, "revoked_at": key.revoked_at})
