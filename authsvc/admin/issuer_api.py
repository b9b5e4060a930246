"""The admin API's trusted issuers: /api/engine/v2/domains/{id}/trusted_issuers (list, add or change, remove),
wired by authsvc.admin.domain_collections on the admin API's blueprint; docs/token-exchange.md."""

from __future__ import annotations

from authsvc.admin import issuers
from authsvc.admin.domain_collections import domain_collection

# The issuers the domain trusts or issues ID-JAGs for, oldest first. A POST adds an issuer, or changes the
# given fields of the one with this `issuer` (200); a DELETE stops trusting it (and issuing ID-JAGs for it).
domain_collection(
    "trusted_issuers",
    "issuer_id",
    listing=issuers.listing,
    create=issuers.put,
    find=issuers.of_domain,
    remove=issuers.remove,
    create_status=200,
)
