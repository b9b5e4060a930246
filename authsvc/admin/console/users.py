"""The console's users pages."""

from __future__ import annotations

from typing import cast

from flask import flash, redirect, request, url_for
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import (
    ConfirmForm,
    NewUserForm,
    PasswordForm,
    UserForm,
)
from authsvc.auth import reauth
from authsvc.core.models import Domain, User
from authsvc.core.tenancy import current_domain


@bp.get("/domains/<domain_id>/users")
@console_page
def users(actor: admin.Actor, domain: Domain) -> Response:
    return base.render("console/users.html", listing=base.listing(actor, User, domain))


@bp.route("/domains/<domain_id>/users/new", methods=["GET", "POST"])
@console_page
def new_user(actor: admin.Actor, domain: Domain) -> Response:
    base.require_change(actor, domain)
    form = NewUserForm()

    def create() -> Response:
        user = admin.create_user(actor, form.values() | {"domain": str(domain.id)})
        flash(f"User {user.email} created.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=user.id), 303)

    return base.form_page(form, "console/user_new.html", create)


def _user_page(record: User, status: int = 200, error: str | None = None, **forms: FlaskForm) -> Response:
    forms.setdefault("form", UserForm(formdata=None, data=record.as_json()))
    forms.setdefault("password_form", PasswordForm(formdata=None))
    return base.render("console/user.html", status, record=record, error=error, enable_form=ConfirmForm(), **forms)


@bp.route("/domains/<domain_id>/users/<record_id>", methods=["GET", "POST"])
@console_page
def user(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: User = base.record(actor, User, record_id, domain)
    if request.method == "GET":
        return _user_page(record)
    base.require_change(actor, domain)
    form = UserForm()

    def save() -> Response:
        admin.update_user(actor, record, form.values())
        flash("Changes saved.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    return base.submit(form, save, lambda status, error: _user_page(record, status, error, form=form))


@bp.post("/domains/<domain_id>/users/<record_id>/password")
@console_page
def reset_password(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: User = base.record(actor, User, record_id, domain)
    base.require_change(actor, domain)
    # Setting a password hands the account to whoever knows it: the admin signs in again if not recently.
    # The console's actor is always its signed-in user (console_page), never the command line.
    stale = reauth.required(
        cast(User, actor.user), current_domain(), url_for("console.user", domain_id=domain.id, record_id=record.id)
    )
    if stale is not None:
        return stale
    form = PasswordForm()

    def save() -> Response:
        admin.update_user(actor, record, form.values())
        flash(f"Password of {record.email} set; their sessions and tokens have ended.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    return base.submit(form, save, lambda status, error: _user_page(record, status, error, password_form=form))


@bp.route("/domains/<domain_id>/users/<record_id>/disable", methods=["GET", "POST"])
@console_page
def disable_user(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: User = base.record(actor, User, record_id, domain)
    base.require_change(actor, domain)

    def disable() -> Response:
        admin.update_user(actor, record, {"disabled": True})
        flash(f"{record.email} is disabled.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    return base.confirm(
        f"Disable {record.email}?",
        "The user can no longer sign in, and their API keys stop working.",
        "Disable user",
        url_for("console.user", domain_id=domain.id, record_id=record.id),
        disable,
        warning="Every session of the user ends and every token issued to them is revoked at once. "
        "Enabling the user again does not bring them back.",
    )


@bp.post("/domains/<domain_id>/users/<record_id>/enable")
@console_page
def enable_user(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: User = base.record(actor, User, record_id, domain)
    base.require_change(actor, domain)

    def enable() -> Response:
        admin.update_user(actor, record, {"disabled": False})
        flash(f"{record.email} is enabled again.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    return base.submit(ConfirmForm(), enable, lambda status, error: _user_page(record, status, error))
