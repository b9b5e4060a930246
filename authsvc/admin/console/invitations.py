"""The console's invitations (invite by e-mail, send again, revoke) and the domain's sign-up setting."""

from __future__ import annotations

from flask import flash, redirect, url_for
from werkzeug.wrappers import Response
from wtforms import EmailField, SelectField, StringField, TextAreaField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length

from authsvc import admin
from authsvc.admin import invitations
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.schemas.choices import INVITATION_ROLES, SIGNUP_MODES
from authsvc.core.models import Domain
from authsvc.web.forms import PageForm

ROLE_LABELS = {"user": "User", "support": "Support (reads the domain)", "admin": "Admin of the domain"}
SIGNUP_LABELS = {
    "off": "Off: accounts by invitation or by an admin",
    "open": "Open: anyone may sign up",
    "restricted": "Restricted: addresses at the e-mail domains below",
}


class InvitationForm(PageForm):
    email = EmailField("E-mail address", validators=[DataRequired(), Length(max=320)])
    name = StringField("Name", validators=[Length(max=200)])
    role = SelectField("Role", choices=[SelectChoice(r, ROLE_LABELS[r]) for r in INVITATION_ROLES])


class SignupForm(PageForm):
    signup = SelectField("Sign-up", choices=[SelectChoice(m, SIGNUP_LABELS[m]) for m in SIGNUP_MODES])
    signup_email_domains = TextAreaField(
        "E-mail domains", description="One or more, separated by spaces or lines, such as example.com."
    )


@bp.get("/domains/<domain_id>/invitations")
@console_page
def invitations_page(actor: admin.Actor, domain: Domain) -> Response:
    return base.render("console/invitations.html", items=invitations.listing(actor, domain))


@bp.route("/domains/<domain_id>/invitations/new", methods=["GET", "POST"])
@console_page
def new_invitation(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form = InvitationForm()

    def create() -> Response:
        data = {"email": form.email.data, "name": form.name.data or "", "role": form.role.data}
        sent = invitations.invite(actor, domain, data)
        if sent.link is not None:
            return base.render("console/invitation_link.html", record=sent.invitation, link=sent.link)
        flash(f"Invitation sent to {sent.invitation.email}.")
        return redirect(url_for("console.invitations_page", domain_id=domain.id), 303)

    return base.form_page(form, "console/invitation_new.html", create)


@bp.route("/domains/<domain_id>/invitations/<record_id>/resend", methods=["GET", "POST"])
@console_page
def resend_invitation(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record = invitations.of_domain(actor, domain, record_id)
    base.require_change(actor, domain)

    def resend() -> Response:
        sent = invitations.resend(actor, record)
        if sent.link is not None:
            return base.render("console/invitation_link.html", record=record, link=sent.link)
        flash(f"Invitation sent again to {record.email}.")
        return redirect(url_for("console.invitations_page", domain_id=domain.id), 303)

    return base.confirm(
        f"Send the invitation of {record.email} again?",
        "A new link goes to the address, valid for the full time again; the previous link stops working.",
        "Send again",
        url_for("console.invitations_page", domain_id=domain.id),
        resend,
    )


@bp.route("/domains/<domain_id>/invitations/<record_id>/revoke", methods=["GET", "POST"])
@console_page
def revoke_invitation(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record = invitations.of_domain(actor, domain, record_id)
    base.require_change(actor, domain)

    def revoke() -> Response:
        invitations.revoke(actor, record)
        flash(f"Invitation of {record.email} revoked.")
        return redirect(url_for("console.invitations_page", domain_id=domain.id), 303)

    return base.confirm(
        f"Revoke the invitation of {record.email}?",
        "Its link stops working; nothing is made from it.",
        "Revoke invitation",
        url_for("console.invitations_page", domain_id=domain.id),
        revoke,
    )


@bp.route("/domains/<domain_id>/signup", methods=["GET", "POST"])
@console_page
def signup_settings(actor: admin.Actor, domain: Domain) -> Response:
    form = SignupForm(data={"signup": domain.signup, "signup_email_domains": domain.signup_email_domains})

    def save() -> Response:
        base.require_change(actor, domain)
        listed = (form.signup_email_domains.data or "").replace(",", " ").split()
        admin.update_domain(actor, domain, {"signup": form.signup.data, "signup_email_domains": listed})
        flash("Sign-up saved.")
        return redirect(url_for("console.signup_settings", domain_id=domain.id), 303)

    return base.form_page(form, "console/signup.html", save)
