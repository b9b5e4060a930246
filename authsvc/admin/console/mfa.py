"""The console's multi-factor pages: the domain's policy, and resetting a user's factors."""

from __future__ import annotations

from flask import flash, redirect, url_for
from werkzeug.wrappers import Response
from wtforms import SelectField
from wtforms.fields.choices import SelectChoice

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.schemas.choices import POLICIES
from authsvc.auth.mfa import factors
from authsvc.core.models import Domain, User
from authsvc.web.forms import PageForm

POLICY_LABELS = {
    "off": "Nobody (users may still add a second factor)",
    "admins": "Admins and support staff",
    "all": "Everyone (service accounts are exempt)",
}


class PolicyForm(PageForm):
    require = SelectField(
        "Who must sign in with a second factor", choices=[SelectChoice(p, POLICY_LABELS[p]) for p in POLICIES]
    )


@bp.route("/domains/<domain_id>/mfa", methods=["GET", "POST"])
@console_page
def mfa_policy(actor: admin.Actor, domain: Domain) -> Response:
    form = PolicyForm(data={"require": domain.mfa_require})

    def save() -> Response:
        base.require_change(actor, domain)
        admin.set_policy(actor, domain, {"require": form.require.data})
        flash("Multi-factor policy saved.")
        return redirect(url_for("console.mfa_policy", domain_id=domain.id), 303)

    return base.form_page(form, "console/mfa.html", save)


@bp.route("/domains/<domain_id>/users/<record_id>/mfa/reset", methods=["GET", "POST"])
@console_page
def reset_user_factors(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: User = base.record(actor, User, record_id, domain)
    base.require_change(actor, domain)

    def reset() -> Response:
        removed = admin.reset_factors(actor, record)
        flash(f"{removed} second factor(s) of {record.email} removed; their sessions have ended.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    count = len(factors.confirmed_factors(record))
    return base.confirm(
        f"Reset the second factors of {record.email}?",
        f"Their {count} authenticator app(s) and passkey(s) and their recovery codes are removed.",
        "Reset second factors",
        url_for("console.user", domain_id=domain.id, record_id=record.id),
        reset,
        warning="Every session of the user ends. Where the domain requires a second factor, they set up a new "
        "one at their next sign-in.",
    )
