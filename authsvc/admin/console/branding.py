"""The console's page for a domain's branding (docs/branding.md): its fields, the logo's upload, a reset."""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, request, url_for
from werkzeug.wrappers import Response
from wtforms import BooleanField, FileField, StringField

from authsvc import admin
from authsvc.admin import branding
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.core import logo
from authsvc.core.models import Domain
from authsvc.core.validation import Invalid
from authsvc.web.forms import PageForm

# The logo and the form's other fields, with room for the multipart framing.
UPLOAD_LIMIT = logo.MAX_BYTES + 64 * 1024
HINTS = {
    "primary_color": "#RRGGBB: the main button's background. Black text replaces white when white would be "
    "hard to read (WCAG 2.1 AA).",
    "background_color": "#RRGGBB: the page's background.",
    "support_email": "Shown as the support link when there is no support URL.",
    "default_locale": "A language tag such as en or de-CH.",
}


class BrandingForm(PageForm):
    display_name = StringField("Display name", description="Shown in the header of every page and e-mail.")
    logo = FileField("Logo", description="PNG, JPEG or WebP, at most 256 KiB and 1024 pixels a side.")
    remove_logo = BooleanField("Remove the logo")
    primary_color = StringField("Primary colour", description=HINTS["primary_color"])
    background_color = StringField("Background colour", description=HINTS["background_color"])
    support_url = StringField("Support URL", description="https only, as the other links.")
    support_email = StringField("Support e-mail", description=HINTS["support_email"])
    privacy_url = StringField("Privacy URL")
    terms_url = StringField("Terms URL")
    default_locale = StringField("Default language", description=HINTS["default_locale"])


TEXT_FIELDS = (
    "display_name",
    "primary_color",
    "background_color",
    "support_url",
    "support_email",
    "privacy_url",
    "terms_url",
    "default_locale",
)


@bp.route("/domains/<domain_id>/branding", methods=["GET", "POST"])
@console_page
def branding_page(actor: admin.Actor, domain: Domain) -> Response:
    request.max_content_length = UPLOAD_LIMIT
    shown = branding.get_branding(actor, domain)
    form = BrandingForm(data={name: shown[name] or "" for name in TEXT_FIELDS})

    def save() -> Response:
        base.require_change(actor, domain)
        changes: dict[str, Any] = {name: (getattr(form, name).data or "").strip() or None for name in TEXT_FIELDS}
        upload = form.logo.data.read(logo.MAX_BYTES + 1) if form.logo.data else None
        if upload is not None:
            try:  # refused before anything is saved: the form is shown again as it was sent
                logo.reencode(upload)
            except Invalid as exc:
                raise admin.ValidationFailed({"logo": str(exc)}) from None
        branding.set_branding(actor, domain, changes)
        if upload is not None:
            branding.set_logo(actor, domain, upload)
        elif form.remove_logo.data:
            branding.remove_logo(actor, domain)
        flash("Branding saved.")
        return redirect(url_for("console.branding_page", domain_id=domain.id), 303)

    return base.form_page(form, "console/branding.html", save, branding=shown)


@bp.route("/domains/<domain_id>/branding/reset", methods=["GET", "POST"])
@console_page
def reset_branding(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)

    def reset() -> Response:
        branding.reset_branding(actor, domain)
        flash("The domain has the default look again.")
        return redirect(url_for("console.branding_page", domain_id=domain.id), 303)

    return base.confirm(
        "Reset the branding?",
        f"The pages and e-mails of {domain.name} go back to the default look: every field and the logo are removed.",
        "Reset",
        url_for("console.branding_page", domain_id=domain.id),
        reset,
    )
