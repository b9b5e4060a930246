"""The console's applications pages."""

from __future__ import annotations

from flask import flash, redirect, request, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import (
    ApplicationForm,
    NewApplicationForm,
)
from authsvc.core.models import Application, Domain


@bp.get("/domains/<domain_id>/applications")
@console_page
def applications(actor: admin.Actor, domain: Domain) -> Response:
    return base.render("console/applications.html", listing=base.listing(actor, Application, domain))


@bp.route("/domains/<domain_id>/applications/new", methods=["GET", "POST"])
@console_page
def new_application(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form = NewApplicationForm(data={"scopes": "public", "require_pkce": True})

    def create() -> Response:
        application, secret = admin.create_application(actor, form.values() | {"domain": str(domain.id)})
        if secret:
            return base.render("console/secret.html", kind="application", record=application, secret=secret)
        flash(f"Application {application.name} created.")
        return redirect(url_for("console.application", domain_id=domain.id, record_id=application.id), 303)

    return base.form_page(form, "console/application_new.html", create)


@bp.route("/domains/<domain_id>/applications/<record_id>", methods=["GET", "POST"])
@console_page
def application(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: Application = base.record(actor, Application, record_id, domain)
    form = ApplicationForm(
        data=record.as_json()
        | {
            "redirect_uris": "\n".join(record.redirect_uris),
            "post_logout_redirect_uris": "\n".join(record.post_logout_redirect_uris or []),
            "id_token_signed_response_alg": record.id_token_signed_response_alg or "",
            "resources": "\n".join(record.resources or []),
            "token_exchange": record.token_exchange is not None,
            "token_exchange_impersonation": bool((record.token_exchange or {}).get("impersonation")),
            "token_exchange_refresh_tokens": bool((record.token_exchange or {}).get("refresh_tokens")),
        }
    )

    def save() -> Response:
        admin.update_application(actor, record, form.values())
        flash("Changes saved.")
        return redirect(url_for("console.application", domain_id=domain.id, record_id=record.id), 303)

    if request.method == "POST":
        base.require_change(actor, domain)  # support users may look
    return base.form_page(form, "console/application.html", save, record=record)


@bp.route("/domains/<domain_id>/applications/<record_id>/regenerate", methods=["GET", "POST"])
@console_page
def regenerate_secret(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: Application = base.record(actor, Application, record_id, domain)
    base.require_change(actor, domain)

    def regenerate() -> Response:
        secret = admin.regenerate_secret(actor, record)
        return base.render("console/secret.html", kind="application", record=record, secret=secret, regenerated=True)

    return base.confirm(
        f"Regenerate the secret of {record.name}?",
        "A new client secret is made and shown once.",
        "Regenerate secret",
        url_for("console.application", domain_id=domain.id, record_id=record.id),
        regenerate,
        warning="The current secret stops working at once: the application fails until it has the new one.",
    )


@bp.route("/domains/<domain_id>/applications/<record_id>/delete", methods=["GET", "POST"])
@console_page
def delete_application(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: Application = base.record(actor, Application, record_id, domain)
    base.require_change(actor, domain)
    name = record.name

    def delete() -> Response:
        revoked = admin.delete_application(actor, record)
        flash(f"Application {name} deleted; {revoked} live token(s) revoked.")
        return redirect(url_for("console.applications", domain_id=domain.id), 303)

    return base.confirm(
        f"Delete {name}?",
        f"The application with client id {record.client_id} is deleted, with its tokens and approvals.",
        "Delete application",
        url_for("console.application", domain_id=domain.id, record_id=record.id),
        delete,
        warning="Its client id stops working and every token issued to it is revoked at once.",
    )
