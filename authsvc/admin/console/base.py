"""The console at /auth/admin/: Domains -> Applications, Users, API keys and SSO, for people.

Thin views over the verbs of ``authsvc.admin``, which decide who may do what,
validate, and write the audit records. The signed-in user (the ``user``
session) acts; support users get the same pages without forms. Destructive
actions ask first on a page of their own, and a secret is shown once, on the
answer to the POST that made it: never in a URL or the Flask session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, redirect, request, url_for
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin.console.forms import (
    ConfirmForm,
)
from authsvc.auth import sessions
from authsvc.auth.mfa import factors
from authsvc.core import actors, errors, validation
from authsvc.core.models import Domain, User
from authsvc.core.permissions import SUPPORT_OR_ADMIN
from authsvc.core.policy import shows_pages, unbudgeted
from authsvc.core.request_state import part
from authsvc.core.tenancy import current_domain
from authsvc.web import i18n
from authsvc.web.pages import page

bp = shows_pages(unbudgeted(Blueprint("console", __name__, url_prefix="/auth/admin")))
# For operators: English, whatever their browser asks (docs/translations.md).
i18n.english_only(bp)

PER_PAGE = 50
FORM_EXPIRED = "The form expired. Please submit it again."
# The verbs' names for fields that the console's forms call something else.
FIELD_ALIASES = {"expires_at": "expires_in_days"}


# Who is looking, and how outcomes become pages


@dataclass
class ConsoleView:
    """Who looks at the request's console page and at which domain (authsvc.core.request_state.part)."""

    user: User | None = None
    actor: admin.Actor | None = None
    domain: Domain | None = None


def console_page(view: Callable[..., Response]) -> Callable[..., Response]:
    """Sign-in and permission checks, the domain of the URL, and admin outcomes as pages."""

    @wraps(view)
    def wrapped(**kwargs: Any) -> Response:
        looking = part(ConsoleView)
        user = looking.user = sessions.session_user(current_domain())
        if user is None:
            here = request.full_path if request.query_string else request.path
            return redirect("/auth/login?" + urlencode({"continue": here}), 303)
        if not user.permissions & SUPPORT_OR_ADMIN:
            return message(403, "Not allowed", "The console is for the admins and support staff of a domain.")
        refused = _second_factor_missing(user)
        if refused is not None:
            return refused
        actor = looking.actor = admin.Actor(user=user, name=actors.of_user(user.id), permissions=user.permissions)
        try:
            if "domain_id" in kwargs:
                looking.domain = kwargs["domain"] = admin.get(actor, Domain, kwargs.pop("domain_id"))
            return view(actor, **kwargs)
        except (admin.Forbidden, admin.NotFound) as exc:
            return refusal_page(exc)

    return wrapped


def _second_factor_missing(user: User) -> Response | None:
    """Under the domain's multi-factor policy: enrol first, and use a session that passed the factor."""
    domain = current_domain()
    session = sessions.current_session(domain)
    if factors.console_allowed(user, domain, (session.amr if session else None) or []):
        return None
    if user.service_account:
        return message(
            403, "Not allowed", "Service accounts may not open the console while a second factor is required."
        )
    if not factors.enrolled(user):
        return redirect(url_for("mfa_settings.add_totp"), 303)
    # A session from before the policy, or from single sign-on: sign in again, with the second factor.
    return message(
        403,
        "Sign in again",
        "The console needs a sign-in with your second factor. Sign out, then sign in again.",
    )


def render(template: str, status: int = 200, **context: Any) -> Response:
    looking = part(ConsoleView)
    actor, domain = looking.actor, looking.domain
    return page(
        template,
        status,
        actor=actor,
        user=looking.user,
        domain=domain,
        can_change=bool(actor and domain and actor.can_change(domain.id)),
        **context,
    )


@bp.app_template_filter("console_time")
def console_time(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def message(status: int, title: str, message: str) -> Response:
    return render("console/message.html", status, title=title, message=message)


def refusal_page(exc: Exception) -> Response:
    """An admin rule's refusal as a page: its status, title and text from the one error table (core.errors)."""
    answer = errors.answer(exc)
    return message(answer.status, errors.title(answer), answer.description)


def require_change(actor: admin.Actor, domain: Domain) -> None:
    """Support users see no forms: refuse before showing one."""
    if not actor.can_change(domain.id):
        raise admin.Forbidden()


def record(actor: admin.Actor, model: type, record_id: str, domain: Domain) -> Any:
    """The record, if the actor may read it and it belongs to the URL's domain."""
    record = admin.get(actor, model, record_id)
    if record.domain_id != domain.id:
        raise admin.NotFound()
    return record


def submit(form: FlaskForm, action: Callable[[], Response], again: Callable[[int, str | None], Response]) -> Response:
    """Run ``action`` on a valid submission; else show the form ``again``, saying what is wrong."""
    if not form.validate_on_submit():
        return again(400, FORM_EXPIRED) if form.csrf_token.errors else again(422, None)
    try:
        return action()
    except admin.ValidationFailed as exc:
        return again(errors.answer(exc).status, attach_errors(form, exc.fields))
    except admin.Conflict as exc:
        conflict = errors.answer(exc)
        return again(conflict.status, conflict.description)


def attach_errors(form: FlaskForm, fields: dict[str, str]) -> str | None:
    """Put each message on its form field; return the rest as one message for the top of the form."""
    rest = []
    for name, message in fields.items():
        field = form._fields.get(FIELD_ALIASES.get(name, name))
        if field is None:
            rest.append(f"{name.replace('_', ' ').capitalize()}: {message}.")
        else:
            field.errors = [*field.errors, message]
    return " ".join(rest) or None


def confirm(
    title: str, message: str, button: str, cancel: str, action: Callable[[], Response], warning: str | None = None
) -> Response:
    """A destructive action's two steps: GET shows what will happen, POST (with CSRF) does it."""
    context = {"title": title, "message": message, "warning": warning, "button": button, "cancel": cancel}
    return form_page(ConfirmForm(), "console/confirm.html", action, **context)


def form_page(form: FlaskForm, template: str, action: Callable[[], Response], **context: Any) -> Response:
    """GET shows ``form`` on ``template``; POST runs ``action`` on a valid submission, else shows it again."""

    def again(status: int, error: str | None) -> Response:
        return render(template, status, form=form, error=error, **context)

    return again(200, None) if request.method == "GET" else submit(form, action, again)


def listing(actor: admin.Actor, model: type, domain: Domain | None) -> dict[str, Any]:
    """One page of a list, with the search text and page number from the query string."""
    text = request.args.get("q", "").replace("\x00", "")[:200].strip() or None
    raw = request.args.get("page", "1")
    number = validation.record_id(raw, max_digits=7) or 1
    result = admin.listing(
        actor, model, text=text, page=number, per_page=PER_PAGE, domain_id=domain.id if domain else None
    )
    return result | {"q": text or "", "pages": max(1, -(-result["total"] // PER_PAGE))}


# Domains


@bp.get("/")
@console_page
def index(actor: admin.Actor) -> Response:
    return render("console/domains.html", listing=listing(actor, Domain, None))


@bp.get("/domains/<domain_id>/")
@console_page
def domain_home(actor: admin.Actor, domain: Domain) -> Response:
    return redirect(url_for("console.applications", domain_id=domain.id), 303)
