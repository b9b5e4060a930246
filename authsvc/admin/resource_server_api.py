"""The admin API's protected resources: /api/engine/v2/domains/{id}/resources (list, create), each resource's
read, change and removal (RFC 8707, RFC 9728; docs/mcp.md). Routes on the admin API's blueprint
(authsvc.admin.api)."""

from __future__ import annotations

from flask import Response, jsonify

from authsvc import admin
from authsvc.admin import resource_servers
from authsvc.admin.api import _created, body, bp, current_actor
from authsvc.core.headers import no_store
from authsvc.core.models import Domain


@bp.get("/domains/<record_id>/resources")
@no_store
def list_resource_servers(record_id: str) -> Response:
    """The domain's protected resources, oldest first."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    return jsonify(items=[server.as_json() for server in resource_servers.listing(actor, domain)])


@bp.post("/domains/<record_id>/resources")
@no_store
def create_resource_server(record_id: str) -> Response:
    """Register a resource: a token asked for with its URI gets it as aud, and only its scopes."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    return _created(resource_servers.create(actor, domain, body()).as_json())


@bp.get("/domains/<record_id>/resources/<resource_id>")
@no_store
def get_resource_server(record_id: str, resource_id: str) -> Response:
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    return jsonify(resource_servers.of_domain(actor, domain, resource_id).as_json())


@bp.patch("/domains/<record_id>/resources/<resource_id>")
@no_store
def update_resource_server(record_id: str, resource_id: str) -> Response:
    """Change the URI, the name or the scopes."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    server = resource_servers.of_domain(actor, domain, resource_id)
    return jsonify(resource_servers.update(actor, domain, server, body()).as_json())


@bp.delete("/domains/<record_id>/resources/<resource_id>")
@no_store
def delete_resource_server(record_id: str, resource_id: str) -> Response:
    """Remove the resource: tokens are no longer issued for it."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    server = resource_servers.of_domain(actor, domain, resource_id)
    resource_servers.remove(actor, server)
    return jsonify(server.as_json())
