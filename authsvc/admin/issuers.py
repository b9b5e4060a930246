"""A domain's trusted issuers (token exchange, ID-JAGs; docs/token-exchange.md): added, changed, listed, removed.

Trusting an issuer lets its tokens stand for the domain's users (by e-mail): an
admin's decision for the domain, audited like every change.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from authsvc.admin.actors import Actor, audit_change, commit, require_change, save_change, save_new
from authsvc.admin.schemas import read
from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.errors import NotFound, ValidationFailed
from authsvc.core.models import Domain, TrustedIssuer
from authsvc.core.settings import settings
from authsvc.oauth import client_authentication, trusted_issuers


def put(actor: Actor, domain: Domain, data: Any) -> TrustedIssuer:
    """Add the issuer ``data`` names to the domain, or change the given fields of the one it has."""
    from authsvc.admin.schemas.issuers import TrustedIssuerChange

    require_change(actor, domain.id)
    given = read(TrustedIssuerChange, data).given()
    problems: dict[str, str] = {}
    if given.get("jwks_uri"):
        try:
            allow_private = settings().trusted_issuer_allow_private_networks
            client_authentication.client_jwks_uri(given["jwks_uri"], allow_private=allow_private)
        except validation.Invalid as exc:
            problems["jwks_uri"] = str(exc)
    row = trusted_issuers.find(domain, given["issuer"])
    values = {name: value for name, value in given.items() if value is not None and name != "issuer"}
    jwks_uri = values.get("jwks_uri", row.jwks_uri if row else None)
    for name in ("subject_tokens", "id_jag"):
        if values.get(name) and not jwks_uri:
            problems[name] = "needs a jwks_uri: the issuer's keys verify its tokens"
    if values.get("create_users") and not values.get("id_jag", row.id_jag if row else False):
        problems["create_users"] = "needs id_jag: users are created from the issuer's ID-JAGs"
    if problems:
        raise ValidationFailed(problems)
    if row is None:
        row = TrustedIssuer(domain_id=domain.id, issuer=given["issuer"], **values)
        save_new(actor, row, "trusted_issuer", domain.id, "that issuer")
        return row
    save_change(actor, row, "trusted_issuer", row.as_json(), values, what="that issuer")
    return row


def listing(actor: Actor, domain: Domain) -> list[TrustedIssuer]:
    require_change(actor, domain.id)
    return list(
        db.session.scalars(select(TrustedIssuer).where(TrustedIssuer.domain_id == domain.id).order_by(TrustedIssuer.id))
    )


def of_domain(actor: Actor, domain: Domain, record_id: str) -> TrustedIssuer:
    require_change(actor, domain.id)
    ident = validation.record_id(record_id)
    row = db.session.get(TrustedIssuer, ident) if ident is not None else None
    if row is None or row.domain_id != domain.id:
        raise NotFound()
    return row


def remove(actor: Actor, row: TrustedIssuer) -> None:
    """Stop trusting the issuer: its tokens are refused from now on (tokens already issued stay)."""
    require_change(actor, row.domain_id)
    before = row.as_json()
    db.session.delete(row)
    audit_change(actor, "trusted_issuer.deleted", row.domain_id, f"trusted_issuer:{row.id}", before=before)
    commit("that issuer")
