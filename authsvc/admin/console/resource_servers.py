"""The console's protected resources page (RFC 8707, RFC 9728; docs/mcp.md): the domain's resources, one to
register, each to remove."""

from __future__ import annotations

from flask import flash, redirect, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin import resource_servers
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import ResourceServerForm
from authsvc.core.models import Domain


def _page(domain: Domain) -> str:
    return url_for("console.protected_resources", domain_id=domain.id)


@bp.route("/domains/<domain_id>/resources", methods=["GET", "POST"])
@console_page
def protected_resources(actor: admin.Actor, domain: Domain) -> Response:
    form = ResourceServerForm()

    def create() -> Response:
        base.require_change(actor, domain)
        server = resource_servers.create(actor, domain, form.values())
        flash(f"Resource {server.uri} registered.")
        return redirect(_page(domain), 303)

    return base.form_page(form, "console/resources.html", create, servers=resource_servers.listing(actor, domain))


@bp.route("/domains/<domain_id>/resources/<record_id>/delete", methods=["GET", "POST"])
@console_page
def delete_protected_resource(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    server = resource_servers.of_domain(actor, domain, record_id)
    base.require_change(actor, domain)

    def remove() -> Response:
        resource_servers.remove(actor, server)
        flash(f"Resource {server.uri} removed.")
        return redirect(_page(domain), 303)

    return base.confirm(
        f"Remove the resource {server.name}?",
        f"No token is issued for {server.uri} any more; tokens already issued for it stay until they expire.",
        "Remove resource",
        _page(domain),
        remove,
    )
