"""The console's page for a domain's security profile: standard, or FAPI 2.0 (docs/fapi.md)."""

from __future__ import annotations

from flask import flash, redirect, url_for
from werkzeug.wrappers import Response
from wtforms import SelectField
from wtforms.fields.choices import SelectChoice

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.core.models import PROFILES, Domain
from authsvc.web.forms import PageForm

PROFILE_LABELS = {
    "standard": "Standard: the service's usual rules",
    "fapi2": "FAPI 2.0 Security Profile, for every application",
}


class ProfileForm(PageForm):
    profile = SelectField("Security profile", choices=[SelectChoice(p, PROFILE_LABELS[p]) for p in PROFILES])


@bp.route("/domains/<domain_id>/profile", methods=["GET", "POST"])
@console_page
def security_profile(actor: admin.Actor, domain: Domain) -> Response:
    form = ProfileForm(data={"profile": domain.profile})

    def save() -> Response:
        base.require_change(actor, domain)
        admin.update_domain(actor, domain, {"profile": form.profile.data})
        flash("Security profile saved.")
        return redirect(url_for("console.security_profile", domain_id=domain.id), 303)

    return base.form_page(form, "console/profile.html", save)
