"""``resources``: a domain's protected resources (RFC 8707, RFC 9728; docs/mcp.md)."""

from __future__ import annotations

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc import admin
from authsvc.admin import resource_servers
from authsvc.cli.common import admin_rules, domain_by_host, emit
from authsvc.core.database import db
from authsvc.core.models import ResourceServer

resources = AppGroup("resources", help="Protected resources of a domain: what tokens asked for with resource are for.")


@resources.command("create")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option(
    "--uri", required=True, help="The resource's URI (RFC 8707 'resource'), e.g. https://mcp.example.com/mcp."
)
@click.option("--name", required=True, help="What the consent page and the console call it.")
@click.option("--scopes", required=True, help="Space-separated scopes of the domain a token for it may carry.")
def create_resource(host: str, uri: str, name: str, scopes: str) -> None:
    """Register a resource: a token asked for with its URI gets it as aud, and only its scopes."""
    data = {"domain": str(domain_by_host(host).id), "uri": uri, "name": name, "scopes": scopes}
    with admin_rules():
        server = admin.create_resource_server(admin.command_line(), data)
    emit({"id": str(server.id), "uri": server.uri})


@resources.command("list")
@click.option("--domain", "host", required=True, help="The domain's host.")
def list_resources(host: str) -> None:
    """The domain's resources, oldest first."""
    query = (
        select(ResourceServer).where(ResourceServer.domain_id == domain_by_host(host).id).order_by(ResourceServer.id)
    )
    emit({"resources": [r.as_json() for r in db.session.scalars(query)]})


@resources.command("delete")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--uri", required=True, help="The resource's URI, as registered.")
def delete_resource(host: str, uri: str) -> None:
    """Remove a resource: no token is issued for its URI any more (those issued stay)."""
    actor = admin.command_line()
    with admin_rules():
        server = resource_servers.by_uri(domain_by_host(host), uri)
        resource_servers.remove(actor, server)
    emit({"deleted": str(server.id), "uri": server.uri})
