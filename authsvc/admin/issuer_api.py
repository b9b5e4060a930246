"""The admin API's trusted issuers: /api/engine/v2/domains/{id}/trusted_issuers (list, add or change, remove),
wired by authsvc.admin.domain_collections on the admin API's blueprint; docs/token-exchange.md."""

from __future__ import annotations

from typing import Any

from authsvc.admin import issuers
from authsvc.admin.actors import Actor
from authsvc.admin.domain_collections import domain_collection
from authsvc.core.models import Domain, TrustedIssuer


def _put(actor: Actor, domain: Domain, data: Any) -> dict[str, Any]:
    """Add an issuer, or change the given fields of the one with this `issuer`."""
    return issuers.put(actor, domain, data).as_json()


def _remove(actor: Actor, row: TrustedIssuer) -> dict[str, Any]:
    """Stop trusting the issuer (and issuing ID-JAGs for it)."""
    issuers.remove(actor, row)
    return row.as_json()


# The issuers the domain trusts or issues ID-JAGs for, oldest first; a POST may change one: 200.
domain_collection(
    "trusted_issuers",
    "issuer_id",
    listing=issuers.listing,
    create=_put,
    find=issuers.of_domain,
    remove=_remove,
    create_status=200,
)
