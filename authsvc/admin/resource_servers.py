"""A domain's protected resources (RFC 8707, RFC 9728), registered by its admins (authsvc.oauth.resources)."""

from __future__ import annotations

from typing import Any

from authsvc.admin.actors import Actor, save_new
from authsvc.admin.schemas import read, target_domain
from authsvc.core import validation
from authsvc.core.errors import ValidationFailed
from authsvc.core.models import RESERVED_SCOPES, ResourceServer


def create_resource_server(actor: Actor, data: Any) -> ResourceServer:
    """A new protected resource of the domain; its scopes are among the domain's (never a reserved one)."""
    from authsvc.admin.schemas.resource_servers import ResourceServerCreate

    domain = target_domain(actor, data)
    values = read(ResourceServerCreate, data)
    known = [s for s in domain.scope_list if s not in RESERVED_SCOPES]
    try:
        scopes = validation.scopes(values.scopes, known)
    except validation.Invalid as exc:
        raise ValidationFailed({"scopes": str(exc)}) from None
    server = ResourceServer(domain_id=domain.id, uri=values.uri, name=values.name, scopes=scopes)
    save_new(actor, server, "resource_server", domain.id, "a resource with this URI in the domain")
    return server
