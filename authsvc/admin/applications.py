"""Applications (OAuth 2.0 clients) of a domain."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import delete

from authsvc.admin.actors import Actor, Conflict, audit_change, commit, require_change
from authsvc.admin.fields import Fields, domain_field
from authsvc.core import security, validation
from authsvc.core.database import db
from authsvc.core.models import Application, Consent, Domain, Token, User
from authsvc.oauth.keys import ALGORITHMS as ID_TOKEN_ALGORITHMS


def _service_account(fields: Fields, domain: Domain) -> int | None:
    """The ``service_account`` field: the id of an enabled-or-not service account of the domain."""
    given = fields.string("service_account", max_length=20)
    if given is None:
        return None
    user_id = validation.record_id(given)
    user = db.session.get(User, user_id) if user_id is not None else None
    if user is None or user.domain_id != domain.id or not user.service_account:
        fields.errors["service_account"] = "must be a service account of the domain"
        return None
    return user.id


def _application_fields(fields: Fields, domain: Domain) -> dict[str, Any]:
    service_account_id = _service_account(fields, domain)
    values = {
        "name": fields.string("name", required=True),
        # A client-credentials application redirects nowhere.
        "redirect_uris": fields.strings(
            "redirect_uris", required=service_account_id is None, rule=validation.redirect_uri
        ),
        "service_account_id": service_account_id,
        "scopes": fields.string(
            "scopes", max_length=2000, rule=lambda v: validation.scopes(v, domain.assignable_scopes)
        ),
        "consent": fields.boolean("consent"),
        "require_pkce": fields.boolean("require_pkce"),
        "allow_plain_pkce": fields.boolean("allow_plain_pkce"),
        "device": fields.boolean("device"),
        "access_token_ttl": fields.integer("access_token_ttl", rule=validation.ttl),
        "refresh_token_ttl": fields.integer("refresh_token_ttl", rule=validation.ttl),
        "id_token_signed_response_alg": fields.string("id_token_signed_response_alg", max_length=10),
    }
    if values["id_token_signed_response_alg"] not in (None, *ID_TOKEN_ALGORITHMS):
        fields.errors["id_token_signed_response_alg"] = f"must be one of {', '.join(ID_TOKEN_ALGORITHMS)}"
    explicit_null = ("access_token_ttl", "refresh_token_ttl", "service_account")
    return {
        k: v
        for k, v in values.items()
        if v is not None or (fields.has(k.removesuffix("_id")) and k.removesuffix("_id") in explicit_null)
    }


def create_application(actor: Actor, data: Any) -> tuple[Application, str | None]:
    fields = Fields(data, partial=False)
    domain = domain_field(actor, fields)
    values = _application_fields(fields, domain) if domain else {}
    confidential = fields.boolean("confidential")
    if values.get("service_account_id") and not confidential:
        fields.errors["service_account"] = "only a confidential application may have a service account"
    fields.done()
    secret = security.new_secret() if confidential else None
    application = Application(
        domain_id=domain.id,
        client_id=secrets.token_urlsafe(24),
        client_secret_digest=security.digest(secret) if secret else None,
        **{"scopes": "public", "redirect_uris": [], **values},
    )
    db.session.add(application)
    db.session.flush()
    audit_change(actor, "application.created", domain.id, f"application:{application.id}", after=application.as_json())
    commit("that application")
    return application, secret


def update_application(actor: Actor, application: Application, data: Any) -> Application:
    require_change(actor, application.domain_id)
    before = application.as_json()
    fields = Fields(data, partial=True)
    values = _application_fields(fields, application.domain)
    if fields.has("confidential") or fields.has("client_id"):
        fields.errors["confidential" if fields.has("confidential") else "client_id"] = "cannot be changed"
    if values.get("service_account_id") and not application.confidential:
        fields.errors["service_account"] = "only a confidential application may have a service account"
    fields.done()
    for attr, value in values.items():
        setattr(application, attr, value)
    audit_change(
        actor,
        "application.updated",
        application.domain_id,
        f"application:{application.id}",
        before,
        application.as_json(),
    )
    commit("that application")
    return application


def regenerate_secret(actor: Actor, application: Application) -> str:
    """A new client secret, shown once; the old one stops working at once."""
    require_change(actor, application.domain_id)
    if not application.confidential:
        raise Conflict("a public application has no secret")
    secret = security.new_secret()
    application.client_secret_digest = security.digest(secret)
    audit_change(actor, "application.secret_regenerated", application.domain_id, f"application:{application.id}")
    db.session.commit()
    return secret


def delete_application(actor: Actor, application: Application) -> int:
    """Delete the application and its tokens; return how many tokens were live."""
    require_change(actor, application.domain_id)
    before = application.as_json()
    live = Token.revoke_where(Token.application_id == application.id)
    db.session.execute(delete(Token).where(Token.application_id == application.id))
    db.session.execute(delete(Consent).where(Consent.application_id == application.id))
    db.session.delete(application)
    target = f"application:{before['id']}"
    audit_change(actor, "application.deleted", application.domain_id, target, before=before | {"revoked_tokens": live})
    db.session.commit()
    return live
