"""The admin API's protected resources: /api/engine/v2/domains/{id}/resources (list, create), each resource's
read, change and removal (RFC 8707, RFC 9728; docs/mcp.md). Routes on the admin API's blueprint
(authsvc.admin.api)."""

from __future__ import annotations

from flask import Response, jsonify

from authsvc.admin import resource_servers
from authsvc.admin.api import body, bp
from authsvc.admin.domain_collections import actor_and_domain, domain_collection
from authsvc.core.headers import no_store

# The domain's protected resources, oldest first. A POST registers one: a token asked for with its URI gets
# it as aud, and only its scopes; a DELETE removes it: tokens are no longer issued for it.
domain_collection(
    "resources",
    "resource_id",
    listing=resource_servers.listing,
    create=resource_servers.create,
    find=resource_servers.of_domain,
    remove=resource_servers.remove,
)


@bp.get("/domains/<record_id>/resources/<resource_id>")
@no_store
def get_resource_server(record_id: str, resource_id: str) -> Response:
    actor, domain = actor_and_domain(record_id)
    return jsonify(resource_servers.of_domain(actor, domain, resource_id).as_json())


@bp.patch("/domains/<record_id>/resources/<resource_id>")
@no_store
def update_resource_server(record_id: str, resource_id: str) -> Response:
    """Change the URI, the name or the scopes."""
    actor, domain = actor_and_domain(record_id)
    server = resource_servers.of_domain(actor, domain, resource_id)
    return jsonify(resource_servers.update(actor, domain, server, body()).as_json())
