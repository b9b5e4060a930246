"""``ldap``: LDAP / Active Directory directories of a domain (docs/ldap.md; docs/platform.md#command-line).

The commands go through the admin verbs (authsvc.admin.ldap_directories), so
the CLI validates and audits as the API does; the operator acts as a system
admin (``cli`` in the audit record) and registers directories on private networks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc import admin
from authsvc.cli.common import admin_rules, domain_by_host, emit
from authsvc.core.database import db
from authsvc.core.models import LdapDirectory

ldap = AppGroup("ldap", help="LDAP / Active Directory directories of a domain.")


# The admin fields whose option is named otherwise.
LDAP_OPTIONS: dict[str, str | None] = {"base_dn": "--base", "ca_pem": "--ca-file"}


def _directory(directory_id: str) -> LdapDirectory:
    directory = db.session.get(LdapDirectory, directory_id) if len(directory_id) <= 32 else None
    if directory is None:
        raise click.ClickException(f"no LDAP directory with id {directory_id!r}")
    return directory


@ldap.command("create")
@click.option("--domain", "host", required=True)
@click.option("--name", required=True, help="For admins; users never see it.")
@click.option("--url", required=True, help="ldap://HOST:PORT (with --starttls) or ldaps://HOST:PORT.")
@click.option("--starttls", is_flag=True, help="Upgrade an ldap:// connection with StartTLS.")
@click.option("--bind-dn", required=True, help="The service account that searches for users.")
@click.option("--bind-password", required=True, help="Its password (stored encrypted, never shown).")
@click.option("--base", "base_dn", required=True, help="Where users are searched for (subtree).")
@click.option("--user-filter", help='Default "(mail={email})"; {email} is replaced by the escaped address.')
@click.option("--group-attribute", help="Attribute listing the user's groups (default memberOf).")
@click.option("--disabled-attribute", help="An attribute whose presence marks an account disabled.")
@click.option("--ca-file", type=click.Path(exists=True, dir_okay=False), help="PEM of the CA(s) of the directory.")
@click.option("--disabled", is_flag=True, help="Create it switched off.")
def create_ldap(
    host: str,
    name: str,
    url: str,
    starttls: bool,
    bind_dn: str,
    bind_password: str,
    base_dn: str,
    user_filter: str | None,
    group_attribute: str | None,
    disabled_attribute: str | None,
    ca_file: str | None,
    disabled: bool,
) -> None:
    domain = domain_by_host(host)
    data: dict[str, Any] = {
        "domain": str(domain.id),
        "name": name,
        "url": url,
        "starttls": starttls,
        "bind_dn": bind_dn,
        "bind_password": bind_password,
        "base_dn": base_dn,
        "user_filter": user_filter,
        "group_attribute": group_attribute,
        "disabled_attribute": disabled_attribute,
        # The PEM is stored, not the path: every instance of the service reads it from the database.
        "ca_pem": Path(ca_file).read_text() if ca_file else None,
        "allow_private_network": True,
        "enabled": not disabled,
    }
    with admin_rules(LDAP_OPTIONS):
        directory = admin.create_ldap_directory(admin.command_line(), data)
    emit({"id": directory.id})


@ldap.command("list")
@click.option("--domain", "host", help="Only this domain's directories.")
def list_ldap(host: str | None) -> None:
    query = select(LdapDirectory).order_by(LdapDirectory.created_at, LdapDirectory.id)
    if host:
        query = query.where(LdapDirectory.domain_id == domain_by_host(host).id)
    emit({"ldap": [d.as_json() for d in db.session.scalars(query)]})


@ldap.command("test")
@click.argument("directory_id")
def test_ldap(directory_id: str) -> None:
    """Bind as the service and search the base DN now: {"id", "ok"}, with "error" when not ok."""
    with admin_rules():
        emit(admin.check_ldap_directory(admin.command_line(), _directory(directory_id)))


@ldap.command("delete")
@click.argument("directory_id")
def delete_ldap(directory_id: str) -> None:
    with admin_rules():
        admin.delete_ldap_directory(admin.command_line(), _directory(directory_id))
    emit({"deleted": directory_id})
