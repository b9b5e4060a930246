"""The console's LDAP directories pages: list, create, view and edit, test the connection, delete."""

from __future__ import annotations

from flask import flash, redirect, request, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import ConfirmForm, LdapDirectoryForm
from authsvc.core.models import Domain, LdapDirectory


@bp.get("/domains/<domain_id>/ldap")
@console_page
def ldap_directories(actor: admin.Actor, domain: Domain) -> Response:
    return base.render("console/ldap_directories.html", listing=base.listing(actor, LdapDirectory, domain))


@bp.route("/domains/<domain_id>/ldap/new", methods=["GET", "POST"])
@console_page
def new_ldap_directory(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form = LdapDirectoryForm(data={"user_filter": "(mail={email})", "group_attribute": "memberOf", "enabled": True})

    def create() -> Response:
        directory = admin.create_ldap_directory(actor, form.values(new=True) | {"domain": str(domain.id)})
        flash(f"LDAP directory {directory.name} created. Test its connection below.")
        return redirect(url_for("console.ldap_directory", domain_id=domain.id, record_id=directory.id), 303)

    return base.form_page(form, "console/ldap_directory.html", create, record=None)


@bp.route("/domains/<domain_id>/ldap/<record_id>", methods=["GET", "POST"])
@console_page
def ldap_directory(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: LdapDirectory = base.record(actor, LdapDirectory, record_id, domain)
    form = LdapDirectoryForm(data=record.as_json())

    def save() -> Response:
        admin.update_ldap_directory(actor, record, form.values(new=False))
        flash("Changes saved.")
        return redirect(url_for("console.ldap_directory", domain_id=domain.id, record_id=record.id), 303)

    if request.method == "POST":
        base.require_change(actor, domain)  # support users may look
    return base.form_page(form, "console/ldap_directory.html", save, record=record, test_form=ConfirmForm())


@bp.post("/domains/<domain_id>/ldap/<record_id>/test")
@console_page
def test_ldap_directory(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: LdapDirectory = base.record(actor, LdapDirectory, record_id, domain)
    base.require_change(actor, domain)
    if not ConfirmForm().validate_on_submit():
        return base.message(400, "Form expired", base.FORM_EXPIRED)
    result = admin.check_ldap_directory(actor, record)
    flash(
        "Connection test: the service bind and the base DN search succeeded."
        if result["ok"]
        else f"Connection test failed: {result['error']}"
    )
    return redirect(url_for("console.ldap_directory", domain_id=domain.id, record_id=record.id), 303)


@bp.route("/domains/<domain_id>/ldap/<record_id>/delete", methods=["GET", "POST"])
@console_page
def delete_ldap_directory(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: LdapDirectory = base.record(actor, LdapDirectory, record_id, domain)
    base.require_change(actor, domain)
    name = record.name

    def delete() -> Response:
        admin.delete_ldap_directory(actor, record)
        flash(f"LDAP directory {name} deleted.")
        return redirect(url_for("console.ldap_directories", domain_id=domain.id), 303)

    return base.confirm(
        f"Delete {name}?",
        "The sign-in stops asking this directory, and the links between users and their entries are removed.",
        "Delete directory",
        url_for("console.ldap_directory", domain_id=domain.id, record_id=record.id),
        delete,
        warning="Users who signed in only through this directory cannot sign in until they have a password "
        "or another way in.",
    )
