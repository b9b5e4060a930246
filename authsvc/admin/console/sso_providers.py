"""The console's SSO providers pages."""

from __future__ import annotations

from flask import flash, redirect, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import MicrosoftSsoForm, SamlSsoForm
from authsvc.core.models import Domain, SsoProvider


@bp.get("/domains/<domain_id>/sso")
@console_page
def sso_providers(actor: admin.Actor, domain: Domain) -> Response:
    return base.render("console/sso_providers.html", listing=base.listing(actor, SsoProvider, domain))


@bp.route("/domains/<domain_id>/sso/new", methods=["GET", "POST"])
@console_page
def new_sso_provider(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form = MicrosoftSsoForm(data={"tenant": "organizations"})

    def create() -> Response:
        provider = admin.create_sso_provider(actor, form.values() | {"domain": str(domain.id)})
        flash(f"SSO provider {provider.name} created. Register its callback URL at Microsoft, then grant consent.")
        return redirect(url_for("console.sso_provider", domain_id=domain.id, record_id=provider.id), 303)

    return base.form_page(form, "console/sso_new.html", create)


@bp.route("/domains/<domain_id>/sso/new-saml", methods=["GET", "POST"])
@console_page
def new_saml_provider(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form = SamlSsoForm()

    def create() -> Response:
        provider = admin.create_sso_provider(actor, form.values() | {"domain": str(domain.id)})
        flash(f"SAML provider {provider.name} created. Give the IdP our metadata URL (or the entity id and ACS).")
        return redirect(url_for("console.sso_provider", domain_id=domain.id, record_id=provider.id), 303)

    return base.form_page(form, "console/sso_saml_new.html", create)


@bp.route("/domains/<domain_id>/sso/<record_id>/refresh-metadata", methods=["GET", "POST"])
@console_page
def refresh_saml_metadata(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: SsoProvider = base.record(actor, SsoProvider, record_id, domain)
    base.require_change(actor, domain)

    def refresh() -> Response:
        changed = admin.refresh_saml_metadata(actor, record)
        flash("The IdP metadata changed and was saved." if changed else "The IdP metadata is unchanged.")
        return redirect(url_for("console.sso_provider", domain_id=domain.id, record_id=record.id), 303)

    return base.confirm(
        f"Refresh the IdP metadata of {record.name}?",
        "The metadata is fetched again from its URL now: a new signing certificate of the IdP is used from then on.",
        "Refresh metadata",
        url_for("console.sso_provider", domain_id=domain.id, record_id=record.id),
        refresh,
    )


@bp.get("/domains/<domain_id>/sso/<record_id>")
@console_page
def sso_provider(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: SsoProvider = base.record(actor, SsoProvider, record_id, domain)
    template = "console/sso_saml_provider.html" if record.kind == "saml" else "console/sso_provider.html"
    return base.render(template, record=record, details=admin.sso_json(record))


@bp.route("/domains/<domain_id>/sso/<record_id>/delete", methods=["GET", "POST"])
@console_page
def delete_sso_provider(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: SsoProvider = base.record(actor, SsoProvider, record_id, domain)
    base.require_change(actor, domain)
    name = record.name

    def delete() -> Response:
        admin.delete_sso_provider(actor, record)
        flash(f"SSO provider {name} deleted.")
        return redirect(url_for("console.sso_providers", domain_id=domain.id), 303)

    return base.confirm(
        f"Delete {name}?",
        "Its button leaves the sign-in page, and the links between users and their accounts there are removed.",
        "Delete provider",
        url_for("console.sso_provider", domain_id=domain.id, record_id=record.id),
        delete,
        warning="Users who signed in only through this provider cannot sign in until they have a password "
        "or another provider.",
    )
