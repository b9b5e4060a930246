"""A domain's protected resources (RFC 8707, RFC 9728), registered by its admins (authsvc.oauth.resources):
created, listed, changed and removed, every change audited."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from authsvc.admin.actors import Actor, audit_change, commit, require_change, save_change, save_new
from authsvc.admin.schemas import read, target_domain
from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.errors import NotFound, ValidationFailed
from authsvc.core.models import RESERVED_SCOPES, Domain, ResourceServer

WHAT = "a resource with this URI in the domain"


def _scopes(domain: Domain, given: str) -> str:
    """``given``, if each is a scope of the domain and none a reserved one; else ValidationFailed on ``scopes``."""
    known = [s for s in domain.scope_list if s not in RESERVED_SCOPES]
    try:
        return validation.scopes(given, known)
    except validation.Invalid as exc:
        raise ValidationFailed({"scopes": str(exc)}) from None


def create_resource_server(actor: Actor, data: Any) -> ResourceServer:
    """A new protected resource of the domain the body names (or the actor's own)."""
    return create(actor, target_domain(actor, data), data)


def create(actor: Actor, domain: Domain, data: Any) -> ResourceServer:
    """A new protected resource of ``domain``; its scopes are among the domain's (never a reserved one)."""
    from authsvc.admin.schemas.resource_servers import ResourceServerCreate

    require_change(actor, domain.id)
    values = read(ResourceServerCreate, data)
    server = ResourceServer(
        domain_id=domain.id, uri=values.uri, name=values.name, scopes=_scopes(domain, values.scopes)
    )
    save_new(actor, server, "resource_server", domain.id, WHAT)
    return server


def listing(actor: Actor, domain: Domain) -> list[ResourceServer]:
    """The domain's resources, oldest first."""
    if not actor.can_read(domain.id):
        raise NotFound()
    query = select(ResourceServer).where(ResourceServer.domain_id == domain.id).order_by(ResourceServer.id)
    return list(db.session.scalars(query))


def of_domain(actor: Actor, domain: Domain, record_id: str) -> ResourceServer:
    """The domain's resource ``record_id``; else NotFound."""
    if not actor.can_read(domain.id):
        raise NotFound()
    ident = validation.record_id(record_id)
    server = db.session.get(ResourceServer, ident) if ident is not None else None
    if server is None or server.domain_id != domain.id:
        raise NotFound()
    return server


def by_uri(domain: Domain, uri: str) -> ResourceServer:
    """The domain's resource with this URI; else NotFound."""
    query = select(ResourceServer).where(ResourceServer.domain_id == domain.id, ResourceServer.uri == uri)
    server = db.session.scalars(query).first()
    if server is None:
        raise NotFound()
    return server


def update(actor: Actor, domain: Domain, server: ResourceServer, data: Any) -> ResourceServer:
    """Change the given fields (uri, name, scopes); tokens already issued keep their aud and scopes."""
    from authsvc.admin.schemas.resource_servers import ResourceServerChange

    require_change(actor, server.domain_id)
    values = {name: value for name, value in read(ResourceServerChange, data).given().items() if value is not None}
    if "scopes" in values:
        values["scopes"] = _scopes(domain, values["scopes"])
    save_change(actor, server, "resource_server", server.as_json(), values, what=WHAT)
    return server


def remove(actor: Actor, server: ResourceServer) -> None:
    """Remove the resource: a token asked for with its URI is refused from now on (those issued stay)."""
    require_change(actor, server.domain_id)
    before = server.as_json()
    db.session.delete(server)
    audit_change(actor, "resource_server.deleted", server.domain_id, f"resource_server:{server.id}", before=before)
    commit(WHAT)
