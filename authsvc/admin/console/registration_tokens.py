"""The console's registration pages: initial access tokens for dynamic client registration (RFC 7591)."""

from __future__ import annotations

from flask import flash, redirect, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import RegistrationTokenForm
from authsvc.core.models import Domain, RegistrationToken


@bp.get("/domains/<domain_id>/registration_tokens")
@console_page
def registration_tokens(actor: admin.Actor, domain: Domain) -> Response:
    return base.render("console/registration_tokens.html", listing=base.listing(actor, RegistrationToken, domain))


@bp.route("/domains/<domain_id>/registration_tokens/new", methods=["GET", "POST"])
@console_page
def new_registration_token(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form = RegistrationTokenForm()

    def create() -> Response:
        token, value = admin.create_registration_token(actor, form.values() | {"domain": str(domain.id)})
        return base.render("console/secret.html", kind="registration_token", record=token, secret=value)

    return base.form_page(form, "console/registration_token_new.html", create)


@bp.route("/domains/<domain_id>/registration_tokens/<record_id>/revoke", methods=["GET", "POST"])
@console_page
def revoke_registration_token(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: RegistrationToken = base.record(actor, RegistrationToken, record_id, domain)
    base.require_change(actor, domain)

    def revoke() -> Response:
        admin.revoke_registration_token(actor, record)
        flash(f"Registration token {record.id} revoked.")
        return redirect(url_for("console.registration_tokens", domain_id=domain.id), 303)

    return base.confirm(
        f"Revoke the registration token {record.name or record.id}?",
        f"The initial access token {record.id} registers no further applications.",
        "Revoke token",
        url_for("console.registration_tokens", domain_id=domain.id),
        revoke,
        warning="The applications it registered stay; delete them under Applications if they must go.",
    )
