"""``domains`` and their scopes: the tenants (their applications: authsvc.cli.applications)."""

from __future__ import annotations

from typing import Any

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc import admin
from authsvc.cli.common import (
    DOMAIN_OPTIONS,
    PROFILE_HELP,
    SIGNUP_HELP,
    admin_rules,
    domain_by_host,
    emit,
)
from authsvc.core.database import db
from authsvc.core.models import (
    CLIENT_METADATA_MODES,
    DEFAULT_DOMAIN_SCOPES,
    PROFILES,
    SIGNUP_MODES,
    STANDARD_PROFILE,
    Domain,
)

domains = AppGroup("domains", help="Domains (tenants), found by Host.")
domain_scopes = AppGroup("scopes", help="The scopes a domain knows; applications and keys pick among them.")
domains.add_command(domain_scopes)


@domains.command("create")
@click.option("--name", required=True)
@click.option("--host", required=True, help="Host name requests for this domain carry.")
@click.option("--scopes", default=DEFAULT_DOMAIN_SCOPES, show_default=True, help="Scopes known to the domain.")
@click.option("--profile", type=click.Choice(PROFILES), default=STANDARD_PROFILE, show_default=True, help=PROFILE_HELP)
def create_domain(name: str, host: str, scopes: str, profile: str) -> None:
    with admin_rules():
        domain = admin.create_domain(
            admin.command_line(), {"name": name, "host": host, "scopes": scopes, "profile": profile}
        )
    # The fields of the command line's contract (docs/cli.md); `domains list` shows the profile.
    emit({"id": str(domain.id), "name": domain.name, "host": domain.host})


@domains.command("update")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--name")
@click.option("--profile", type=click.Choice(PROFILES), help=PROFILE_HELP)
@click.option("--signup", type=click.Choice(SIGNUP_MODES), help=SIGNUP_HELP)
@click.option(
    "--signup-email-domain",
    "signup_email_domains",
    multiple=True,
    help="An e-mail domain whose addresses may sign up under --signup restricted; repeat it; replaces the list.",
)
@click.option(
    "--new-device-notice",
    type=click.Choice(["on", "off"]),
    help="Mail a notice when a user signs in from a browser not seen before for them (default on).",
)
@click.option(
    "--client-metadata-documents",
    type=click.Choice(CLIENT_METADATA_MODES),
    help="Client ID Metadata Documents as client_id: off, allowlist (--client-metadata-host) or any (default).",
)
@click.option(
    "--client-metadata-host",
    "client_metadata_hosts",
    multiple=True,
    help="A host whose client metadata documents the domain reads; repeat it; replaces the list.",
)
@click.option(
    "--client-metadata-allow-private-network/--no-client-metadata-allow-private-network",
    default=None,
    help="Fetch client metadata documents from loopback and private addresses too (a system admin's exception).",
)
@click.option(
    "--open-registration",
    type=click.Choice(["on", "off"]),
    help="Dynamic client registration without an initial access token, as MCP clients register (default off).",
)
def update_domain(
    host: str,
    name: str | None,
    profile: str | None,
    signup: str | None,
    signup_email_domains: tuple[str, ...],
    new_device_notice: str | None,
    client_metadata_documents: str | None,
    client_metadata_hosts: tuple[str, ...],
    client_metadata_allow_private_network: bool | None,
    open_registration: str | None,
) -> None:
    """Change a domain; fapi2 needs every application of it to comply first."""
    domain = domain_by_host(host)
    notice = None if new_device_notice is None else new_device_notice == "on"
    given = {
        "name": name,
        "profile": profile,
        "signup": signup,
        "new_device_notice": notice,
        "client_metadata_documents": client_metadata_documents,
        "client_metadata_allow_private_network": client_metadata_allow_private_network,
        "open_registration": None if open_registration is None else open_registration == "on",
    }
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if signup_email_domains:
        changes["signup_email_domains"] = list(signup_email_domains)
    if client_metadata_hosts:
        changes["client_metadata_hosts"] = list(client_metadata_hosts)
    with admin_rules(DOMAIN_OPTIONS):
        admin.update_domain(admin.command_line(), domain, changes)
    emit(domain.as_json())


@domains.command("list")
def list_domains() -> None:
    emit({"domains": [d.as_json() for d in db.session.scalars(select(Domain).order_by(Domain.id))]})


def _scopes_out(domain: Domain) -> dict[str, Any]:
    return {"id": str(domain.id), "host": domain.host, "scopes": domain.scope_list}


@domain_scopes.command("list")
@click.option("--domain", "host", required=True)
def list_domain_scopes(host: str) -> None:
    """List a domain's scopes."""
    emit(_scopes_out(domain_by_host(host)))


@domain_scopes.command("add")
@click.option("--domain", "host", required=True)
@click.argument("names", nargs=-1, required=True)
def add_domain_scopes(host: str, names: tuple[str, ...]) -> None:
    """Add scopes to a domain, such as PlaceOS resource scopes."""
    domain = domain_by_host(host)
    with admin_rules({"scopes": None}):
        admin.add_domain_scopes(admin.command_line(), domain, {"scopes": " ".join(names)})
    emit(_scopes_out(domain))


@domain_scopes.command("remove")
@click.option("--domain", "host", required=True)
@click.argument("names", nargs=-1, required=True)
def remove_domain_scopes(host: str, names: tuple[str, ...]) -> None:
    """Remove scopes that no application or live API key of the domain still has."""
    domain = domain_by_host(host)
    with admin_rules({"scopes": None}):
        admin.remove_domain_scopes(admin.command_line(), domain, {"scopes": " ".join(names)})
    emit(_scopes_out(domain))
