"""The console at /auth/admin/: Domains -> Applications, Users, API keys and SSO, for people.

Thin views over the verbs of ``authsvc.admin``, which decide who may do what,
validate, and write the audit records. The signed-in user (the ``user``
session) acts; support users get the same pages without forms. Destructive
actions ask first on a page of their own, and a secret is shown once, on the
answer to the POST that made it: never in a URL or the Flask session.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, flash, g, redirect, request, url_for
from flask_wtf import FlaskForm
from sqlalchemy import select

from authsvc import accounts, admin, validation
from authsvc.database import db, now
from authsvc.forms import (
    ApiKeyForm,
    ApplicationForm,
    ConfirmForm,
    MicrosoftSsoForm,
    NewApplicationForm,
    NewUserForm,
    PasswordForm,
    UserForm,
)
from authsvc.models import ApiKey, Application, Domain, SsoProvider, User
from authsvc.pages import page
from authsvc.tenancy import current_domain

bp = Blueprint("console", __name__, url_prefix="/auth/admin")

PER_PAGE = 50
FORM_EXPIRED = "The form expired. Please submit it again."
# The verbs' names for fields that the console's forms call something else.
FIELD_ALIASES = {"expires_at": "expires_in_days"}


# Who is looking, and how outcomes become pages


def console_page(view: Callable[..., Response]) -> Callable[..., Response]:
    """Sign-in and permission checks, the domain of the URL, and admin outcomes as pages."""

    @wraps(view)
    def wrapped(**kwargs: Any) -> Response:
        user = g.console_user = accounts.session_user(current_domain())
        if user is None:
            here = request.full_path if request.query_string else request.path
            return redirect("/auth/login?" + urlencode({"continue": here}), 303)
        if not user.permissions & 3:
            return _message(403, "Not allowed", "The console is for the admins and support staff of a domain.")
        g.console_actor = admin.Actor(user=user, name=f"user:{user.id}", permissions=user.permissions)
        try:
            if "domain_id" in kwargs:
                g.console_domain = kwargs["domain"] = admin.get(g.console_actor, Domain, kwargs.pop("domain_id"))
            return view(g.console_actor, **kwargs)
        except admin.Forbidden:
            return _message(403, "Not allowed", "You may look at this domain, but not change it.")
        except admin.NotFound:
            return _message(404, "Not found", "There is no such record, or it is not one you may see.")

    return wrapped


def _render(template: str, status: int = 200, **context: Any) -> Response:
    actor: admin.Actor | None = g.get("console_actor")
    domain: Domain | None = g.get("console_domain")
    return page(
        template,
        status,
        actor=actor,
        user=g.get("console_user"),
        domain=domain,
        can_change=bool(actor and domain and actor.can_change(domain.id)),
        **context,
    )


@bp.app_template_filter("console_time")
def console_time(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _message(status: int, title: str, message: str) -> Response:
    return _render("console/message.html", status, title=title, message=message)


def _require_change(actor: admin.Actor, domain: Domain) -> None:
    """Support users see no forms: refuse before showing one."""
    if not actor.can_change(domain.id):
        raise admin.Forbidden()


def _record(actor: admin.Actor, model: type, record_id: str, domain: Domain) -> Any:
    """The record, if the actor may read it and it belongs to the URL's domain."""
    record = admin.get(actor, model, record_id)
    if record.domain_id != domain.id:
        raise admin.NotFound()
    return record


def _submit(form: FlaskForm, action: Callable[[], Response], again: Callable[[int, str | None], Response]) -> Response:
    """Run ``action`` on a valid submission; else show the form ``again``, saying what is wrong."""
    if not form.validate_on_submit():
        return again(400, FORM_EXPIRED) if form.csrf_token.errors else again(422, None)
    try:
        return action()
    except admin.ValidationFailed as exc:
        return again(422, _attach_errors(form, exc.fields))
    except admin.Conflict as exc:
        return again(409, str(exc))


def _attach_errors(form: FlaskForm, fields: dict[str, str]) -> str | None:
    """Put each message on its form field; return the rest as one message for the top of the form."""
    rest = []
    for name, message in fields.items():
        field = form._fields.get(FIELD_ALIASES.get(name, name))
        if field is None:
            rest.append(f"{name.replace('_', ' ').capitalize()}: {message}.")
        else:
            field.errors = [*field.errors, message]
    return " ".join(rest) or None


def _confirm(
    title: str, message: str, button: str, cancel: str, action: Callable[[], Response], warning: str | None = None
) -> Response:
    """A destructive action's two steps: GET shows what will happen, POST (with CSRF) does it."""
    context = {"title": title, "message": message, "warning": warning, "button": button, "cancel": cancel}
    return _form_page(ConfirmForm(), "console/confirm.html", action, **context)


def _form_page(form: FlaskForm, template: str, action: Callable[[], Response], **context: Any) -> Response:
    """GET shows ``form`` on ``template``; POST runs ``action`` on a valid submission, else shows it again."""

    def again(status: int, error: str | None) -> Response:
        return _render(template, status, form=form, error=error, **context)

    return again(200, None) if request.method == "GET" else _submit(form, action, again)


def _listing(actor: admin.Actor, model: type, domain: Domain | None) -> dict[str, Any]:
    """One page of a list, with the search text and page number from the query string."""
    text = request.args.get("q", "").replace("\x00", "")[:200].strip() or None
    raw = request.args.get("page", "1")
    number = validation.record_id(raw, max_digits=7) or 1
    result = admin.listing(actor, model, text=text, page=number, per_page=PER_PAGE, domain_id=domain and domain.id)
    return result | {"q": text or "", "pages": max(1, -(-result["total"] // PER_PAGE))}


# Domains


@bp.get("/")
@console_page
def index(actor: admin.Actor) -> Response:
    return _render("console/domains.html", listing=_listing(actor, Domain, None))


@bp.get("/domains/<domain_id>/")
@console_page
def domain_home(actor: admin.Actor, domain: Domain) -> Response:
    return redirect(url_for("console.applications", domain_id=domain.id), 303)


# Applications


@bp.get("/domains/<domain_id>/applications")
@console_page
def applications(actor: admin.Actor, domain: Domain) -> Response:
    return _render("console/applications.html", listing=_listing(actor, Application, domain))


@bp.route("/domains/<domain_id>/applications/new", methods=["GET", "POST"])
@console_page
def new_application(actor: admin.Actor, domain: Domain) -> Response:
    _require_change(actor, domain)
    form = NewApplicationForm(data={"scopes": "public", "require_pkce": True})

    def create() -> Response:
        application, secret = admin.create_application(actor, form.values() | {"domain": str(domain.id)})
        if secret:
            return _render("console/secret.html", kind="application", record=application, secret=secret)
        flash(f"Application {application.name} created.")
        return redirect(url_for("console.application", domain_id=domain.id, record_id=application.id), 303)

    return _form_page(form, "console/application_new.html", create)


@bp.route("/domains/<domain_id>/applications/<record_id>", methods=["GET", "POST"])
@console_page
def application(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: Application = _record(actor, Application, record_id, domain)
    form = ApplicationForm(data=record.as_json() | {"redirect_uris": "\n".join(record.redirect_uris)})

    def save() -> Response:
        admin.update_application(actor, record, form.values())
        flash("Changes saved.")
        return redirect(url_for("console.application", domain_id=domain.id, record_id=record.id), 303)

    if request.method == "POST":
        _require_change(actor, domain)  # support users may look
    return _form_page(form, "console/application.html", save, record=record)


@bp.route("/domains/<domain_id>/applications/<record_id>/regenerate", methods=["GET", "POST"])
@console_page
def regenerate_secret(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: Application = _record(actor, Application, record_id, domain)
    _require_change(actor, domain)

    def regenerate() -> Response:
        secret = admin.regenerate_secret(actor, record)
        return _render("console/secret.html", kind="application", record=record, secret=secret, regenerated=True)

    return _confirm(
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
    record: Application = _record(actor, Application, record_id, domain)
    _require_change(actor, domain)
    name = record.name

    def delete() -> Response:
        revoked = admin.delete_application(actor, record)
        flash(f"Application {name} deleted; {revoked} live token(s) revoked.")
        return redirect(url_for("console.applications", domain_id=domain.id), 303)

    return _confirm(
        f"Delete {name}?",
        f"The application with client id {record.client_id} is deleted, with its tokens and approvals.",
        "Delete application",
        url_for("console.application", domain_id=domain.id, record_id=record.id),
        delete,
        warning="Its client id stops working and every token issued to it is revoked at once.",
    )


# Users


@bp.get("/domains/<domain_id>/users")
@console_page
def users(actor: admin.Actor, domain: Domain) -> Response:
    return _render("console/users.html", listing=_listing(actor, User, domain))


@bp.route("/domains/<domain_id>/users/new", methods=["GET", "POST"])
@console_page
def new_user(actor: admin.Actor, domain: Domain) -> Response:
    _require_change(actor, domain)
    form = NewUserForm()

    def create() -> Response:
        user = admin.create_user(actor, form.values() | {"domain": str(domain.id)})
        flash(f"User {user.email} created.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=user.id), 303)

    return _form_page(form, "console/user_new.html", create)


def _user_page(record: User, status: int = 200, error: str | None = None, **forms: FlaskForm) -> Response:
    forms.setdefault("form", UserForm(formdata=None, data=record.as_json()))
    forms.setdefault("password_form", PasswordForm(formdata=None))
    return _render("console/user.html", status, record=record, error=error, enable_form=ConfirmForm(), **forms)


@bp.route("/domains/<domain_id>/users/<record_id>", methods=["GET", "POST"])
@console_page
def user(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: User = _record(actor, User, record_id, domain)
    if request.method == "GET":
        return _user_page(record)
    _require_change(actor, domain)
    form = UserForm()

    def save() -> Response:
        admin.update_user(actor, record, form.values())
        flash("Changes saved.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    return _submit(form, save, lambda status, error: _user_page(record, status, error, form=form))


@bp.post("/domains/<domain_id>/users/<record_id>/password")
@console_page
def reset_password(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: User = _record(actor, User, record_id, domain)
    _require_change(actor, domain)
    form = PasswordForm()

    def save() -> Response:
        admin.update_user(actor, record, form.values())
        flash(f"Password of {record.email} set; their sessions and tokens have ended.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    return _submit(form, save, lambda status, error: _user_page(record, status, error, password_form=form))


@bp.route("/domains/<domain_id>/users/<record_id>/disable", methods=["GET", "POST"])
@console_page
def disable_user(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: User = _record(actor, User, record_id, domain)
    _require_change(actor, domain)

    def disable() -> Response:
        admin.update_user(actor, record, {"disabled": True})
        flash(f"{record.email} is disabled.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    return _confirm(
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
    record: User = _record(actor, User, record_id, domain)
    _require_change(actor, domain)

    def enable() -> Response:
        admin.update_user(actor, record, {"disabled": False})
        flash(f"{record.email} is enabled again.")
        return redirect(url_for("console.user", domain_id=domain.id, record_id=record.id), 303)

    return _submit(ConfirmForm(), enable, lambda status, error: _user_page(record, status, error))


# API keys


@bp.get("/domains/<domain_id>/api_keys")
@console_page
def api_keys(actor: admin.Actor, domain: Domain) -> Response:
    listing = _listing(actor, ApiKey, domain)
    ids = [int(key["user"]) for key in listing["items"]]
    emails = dict(db.session.execute(select(User.id, User.email).where(User.id.in_(ids))).all())
    emails = {str(k): v for k, v in emails.items()}
    return _render("console/api_keys.html", listing=listing, emails=emails, now=now())


@bp.route("/domains/<domain_id>/api_keys/new", methods=["GET", "POST"])
@console_page
def new_api_key(actor: admin.Actor, domain: Domain) -> Response:
    _require_change(actor, domain)
    form = ApiKeyForm(data={"scopes": "public"})

    def again(status: int, error: str | None) -> Response:
        people = admin.listing(actor, User, text=None, page=1, per_page=500, domain_id=domain.id)["items"]
        return _render("console/api_key_new.html", status, form=form, error=error, people=people)

    def create() -> Response:
        key, value = admin.create_api_key(actor, form.values() | {"domain": str(domain.id)})
        return _render("console/secret.html", kind="api_key", record=key, secret=value)

    return again(200, None) if request.method == "GET" else _submit(form, create, again)


@bp.route("/domains/<domain_id>/api_keys/<record_id>/revoke", methods=["GET", "POST"])
@console_page
def revoke_api_key(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: ApiKey = _record(actor, ApiKey, record_id, domain)
    _require_change(actor, domain)

    def revoke() -> Response:
        admin.revoke_api_key(actor, record)
        flash(f"API key {record.name} revoked.")
        return redirect(url_for("console.api_keys", domain_id=domain.id), 303)

    return _confirm(
        f"Revoke the API key {record.name}?",
        f"The key {record.id} of {record.user.email} is revoked.",
        "Revoke key",
        url_for("console.api_keys", domain_id=domain.id),
        revoke,
        warning="It is refused from the next request on. A revoked key cannot be restored.",
    )


# SSO providers


@bp.get("/domains/<domain_id>/sso")
@console_page
def sso_providers(actor: admin.Actor, domain: Domain) -> Response:
    return _render("console/sso_providers.html", listing=_listing(actor, SsoProvider, domain))


@bp.route("/domains/<domain_id>/sso/new", methods=["GET", "POST"])
@console_page
def new_sso_provider(actor: admin.Actor, domain: Domain) -> Response:
    _require_change(actor, domain)
    form = MicrosoftSsoForm(data={"tenant": "organizations"})

    def create() -> Response:
        provider = admin.create_sso_provider(actor, form.values() | {"domain": str(domain.id)})
        flash(f"SSO provider {provider.name} created. Register its callback URL at Microsoft, then grant consent.")
        return redirect(url_for("console.sso_provider", domain_id=domain.id, record_id=provider.id), 303)

    return _form_page(form, "console/sso_new.html", create)


@bp.get("/domains/<domain_id>/sso/<record_id>")
@console_page
def sso_provider(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: SsoProvider = _record(actor, SsoProvider, record_id, domain)
    return _render("console/sso_provider.html", record=record, details=admin.sso_json(record))


@bp.route("/domains/<domain_id>/sso/<record_id>/delete", methods=["GET", "POST"])
@console_page
def delete_sso_provider(actor: admin.Actor, domain: Domain, record_id: str) -> Response:
    record: SsoProvider = _record(actor, SsoProvider, record_id, domain)
    _require_change(actor, domain)
    name = record.name

    def delete() -> Response:
        admin.delete_sso_provider(actor, record)
        flash(f"SSO provider {name} deleted.")
        return redirect(url_for("console.sso_providers", domain_id=domain.id), 303)

    return _confirm(
        f"Delete {name}?",
        "Its button leaves the sign-in page, and the links between users and their accounts there are removed.",
        "Delete provider",
        url_for("console.sso_provider", domain_id=domain.id, record_id=record.id),
        delete,
        warning="Users who signed in only through this provider cannot sign in until they have a password "
        "or another provider.",
    )
