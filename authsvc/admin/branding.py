"""A domain's branding (docs/branding.md): read by its support and admins, changed by its admins; audited.

Every change gives the domain a new ``branding_version``: each worker's
cached brand (authsvc.core.branding) is keyed by it, so the change shows on
every worker's next page.
"""

from __future__ import annotations

import secrets
from typing import Any

from authsvc.admin import logos
from authsvc.admin.actors import Actor, audit_change, commit, require_change
from authsvc.admin.schemas import read
from authsvc.core import branding
from authsvc.core.database import db
from authsvc.core.models import Domain, DomainBranding

EVENT = "domain.branding_updated"


def get_branding(actor: Actor, domain: Domain) -> dict[str, Any]:
    """The domain's branding; the default look's when it has none (``admin.get`` checked the reading)."""
    return branding.as_json(db.session.get(DomainBranding, domain.id), domain)


def set_branding(actor: Actor, domain: Domain, data: Any) -> dict[str, Any]:
    """Change the fields ``data`` gives; a field given as null returns to the default."""
    from authsvc.admin.schemas.branding import BrandingChange

    require_change(actor, domain.id)
    changes = read(BrandingChange, data).given()
    row, before = _row(domain)
    for attr, value in changes.items():
        setattr(row, attr, value)
    return _save(actor, domain, row, before)


def set_logo(actor: Actor, domain: Domain, upload: bytes) -> dict[str, Any]:
    """Store ``upload`` as the domain's logo, re-encoded (authsvc.core.logo); refused with the reason."""
    require_change(actor, domain.id)
    image = logos.reencoded(upload)
    row, before = _row(domain)
    logos.put(row, image)
    return _save(actor, domain, row, before)


def remove_logo(actor: Actor, domain: Domain) -> dict[str, Any]:
    require_change(actor, domain.id)
    row, before = _row(domain)
    logos.put(row, None)
    return _save(actor, domain, row, before)


def reset_branding(actor: Actor, domain: Domain) -> dict[str, Any]:
    """Return the domain to the default look: its branding, logo included, is deleted."""
    require_change(actor, domain.id)
    row = db.session.get(DomainBranding, domain.id)
    before = branding.as_json(row, domain)
    if row is not None:
        db.session.delete(row)
    domain.branding_version = None
    after = branding.as_json(None, domain)
    audit_change(actor, EVENT, domain.id, f"domain:{domain.id}", before, after)
    commit(f"the branding of domain {domain.host!r}")
    return after


def _row(domain: Domain) -> tuple[DomainBranding, dict[str, Any]]:
    row = db.session.get(DomainBranding, domain.id)
    before = branding.as_json(row, domain)
    if row is None:
        row = DomainBranding(domain_id=domain.id)
        db.session.add(row)
    return row, before


def _save(actor: Actor, domain: Domain, row: DomainBranding, before: dict[str, Any]) -> dict[str, Any]:
    # A new version for every change: workers' cached brands of the old one are never read again.
    domain.branding_version = secrets.randbelow(2**31 - 1) + 1
    db.session.flush()
    after = branding.as_json(row, domain)
    audit_change(actor, EVENT, domain.id, f"domain:{domain.id}", before, after)
    commit(f"the branding of domain {domain.host!r}")
    return after
