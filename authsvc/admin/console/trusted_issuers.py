"""The console's trusted issuers page (docs/token-exchange.md#trusted-issuers): the issuers whose tokens the
domain accepts and the ID-JAG audiences it issues for; trust one, add an audience, remove one. The verbs are
the admin API's (authsvc.admin.issuers)."""

from __future__ import annotations

from collections.abc import Callable

from flask import flash, redirect, request, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin import issuers
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import IdJagAudienceForm, TrustIssuerForm
from authsvc.core.models import Domain

TEMPLATE = "console/trusted_issuers.html"


def _page(domain: Domain) -> str:
    return url_for("console.trusted_issuers", domain_id=domain.id)


def _forms(
    actor: admin.Actor, domain: Domain, trust: TrustIssuerForm, audience: IdJagAudienceForm
) -> Callable[[int, str | None], Response]:
    """The page again with both forms, the error above the one that was posted."""
    posted = "audience" if request.path.endswith("/audience") else "trust"

    def again(status: int, error: str | None) -> Response:
        return base.render(
            TEMPLATE,
            status,
            form=trust,
            audience_form=audience,
            error=error if posted == "trust" else None,
            audience_error=error if posted == "audience" else None,
            issuers=issuers.listing(actor, domain),
        )

    return again


@bp.route("/domains/<domain_id>/trusted_issuers", methods=["GET", "POST"])
@console_page
def trusted_issuers(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)  # as the admin API: the list is a domain admin's
    form, audience = TrustIssuerForm(), IdJagAudienceForm()

    def trust() -> Response:
        row = issuers.put(actor, domain, form.values())
        flash(f"Issuer {row.issuer} trusted.")
        return redirect(_page(domain), 303)

    again = _forms(actor, domain, form, audience)
    return again(200, None) if request.method == "GET" else base.submit(form, trust, again)


@bp.post("/domains/<domain_id>/trusted_issuers/audience")
@console_page
def add_id_jag_audience(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form, audience = TrustIssuerForm(formdata=None), IdJagAudienceForm()

    def add() -> Response:
        try:
            row = issuers.put(actor, domain, audience.values())
        except admin.ValidationFailed as exc:
            # The verb's "issuer" is this form's "audience".
            fields = {"audience" if name == "issuer" else name: text for name, text in exc.fields.items()}
            raise admin.ValidationFailed(fields) from None
        flash(f"ID-JAGs may be issued for {row.issuer}.")
        return redirect(_page(domain), 303)

    return base.submit(audience, add, _forms(actor, domain, form, audience))


@bp.route("/domains/<domain_id>/trusted_issuers/<record_id>/delete", methods=["GET", "POST"])
@console_page
def delete_trusted_issuer(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    row = issuers.of_domain(actor, domain, record_id)

    def remove() -> Response:
        issuers.remove(actor, row)
        flash(f"Issuer {row.issuer} removed.")
        return redirect(_page(domain), 303)

    return base.confirm(
        f"Remove {row.issuer}?",
        "Its tokens are refused from now on, and no ID-JAG is issued for it; tokens already issued stay until "
        "they expire.",
        "Remove issuer",
        _page(domain),
        remove,
    )
