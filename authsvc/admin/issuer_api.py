"""The admin API's trusted issuers: /api/engine/v2/domains/{id}/trusted_issuers (list, add or change, remove).
Routes on the admin API's blueprint (authsvc.admin.api); docs/token-exchange.md."""

from __future__ import annotations

from flask import Response, jsonify

from authsvc import admin
from authsvc.admin import issuers
from authsvc.admin.api import body, bp, current_actor
from authsvc.core.headers import no_store
from authsvc.core.models import Domain


@bp.get("/domains/<record_id>/trusted_issuers")
@no_store
def list_trusted_issuers(record_id: str) -> Response:
    """The issuers the domain trusts or issues ID-JAGs for, oldest first."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    return jsonify(items=[row.as_json() for row in issuers.listing(actor, domain)])


@bp.post("/domains/<record_id>/trusted_issuers")
@no_store
def put_trusted_issuer(record_id: str) -> Response:
    """Add an issuer, or change the given fields of the one with this `issuer`."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    return jsonify(issuers.put(actor, domain, body()).as_json())


@bp.delete("/domains/<record_id>/trusted_issuers/<issuer_id>")
@no_store
def delete_trusted_issuer(record_id: str, issuer_id: str) -> Response:
    """Stop trusting the issuer (and issuing ID-JAGs for it)."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    row = issuers.of_domain(actor, domain, issuer_id)
    issuers.remove(actor, row)
    return jsonify(row.as_json())
