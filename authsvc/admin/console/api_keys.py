"""The console's API keys pages."""

from __future__ import annotations

from flask import flash, redirect, request, url_for
from sqlalchemy import select
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import (
    ApiKeyForm,
)
from authsvc.core.database import db, now
from authsvc.core.models import ApiKey, Domain, User


@bp.get("/domains/<domain_id>/api_keys")
@console_page
def api_keys(actor: admin.Actor, domain: Domain) -> Response:
    listing = base.listing(actor, ApiKey, domain)
    ids = [int(key["user"]) for key in listing["items"]]
    rows = db.session.execute(select(User.id, User.email).where(User.id.in_(ids))).all()
    emails = {str(user_id): email for user_id, email in rows}
    return base.render("console/api_keys.html", listing=listing, emails=emails, now=now())


@bp.route("/domains/<domain_id>/api_keys/new", methods=["GET", "POST"])
@console_page
def new_api_key(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form = ApiKeyForm(data={"scopes": "public"})

    def again(status: int, error: str | None) -> Response:
        people = admin.listing(actor, User, text=None, page=1, per_page=500, domain_id=domain.id)["items"]
        return base.render("console/api_key_new.html", status, form=form, error=error, people=people)

    def create() -> Response:
        key, value = admin.create_api_key(actor, form.values() | {"domain": str(domain.id)})
        return base.render("console/secret.html", kind="api_key", record=key, secret=value)

    return again(200, None) if request.method == "GET" else base.submit(form, create, again)


@bp.route("/domains/<domain_id>/api_keys/<record_id>/revoke", methods=["GET", "POST"])
@console_page
def revoke_api_key(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: ApiKey = base.record(actor, ApiKey, record_id, domain)
    base.require_change(actor, domain)

    def revoke() -> Response:
        admin.revoke_api_key(actor, record)
        flash(f"API key {record.name} revoked.")
        return redirect(url_for("console.api_keys", domain_id=domain.id), 303)

    return base.confirm(
        f"Revoke the API key {record.name}?",
        f"The key {record.id} of {record.user.email} is revoked.",
        "Revoke key",
        url_for("console.api_keys", domain_id=domain.id),
        revoke,
        warning="It is refused from the next request on. A revoked key cannot be restored.",
    )
