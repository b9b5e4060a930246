"""The console's webhooks page: the domain's webhooks, subscribed here, through the admin API or the command
line (docs/events.md), each to rotate the secret of or delete, and the deliveries given up, each to replay.
The verbs are the admin API's (authsvc.admin.webhooks); a secret is shown once, on the answer to its POST."""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, request, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin import webhooks
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import WebhookForm
from authsvc.core.models import Domain
from authsvc.core.settings import settings


def _duration(seconds: int) -> str:
    for unit, name in ((86400, "day"), (3600, "h"), (60, "min")):
        if seconds >= unit and seconds % unit == 0:
            count = seconds // unit
            return f"{count} {name}{'s' if name == 'day' and count > 1 else ''}"
    return f"{seconds} s"


def _back(domain: Domain) -> str:
    return url_for("console.webhooks_page", domain_id=domain.id)


@bp.route("/domains/<domain_id>/webhooks", methods=["GET", "POST"])
@console_page
def webhooks_page(actor: admin.Actor, domain: Domain) -> Response:
    """The list and dead letters; an admin's form subscribes a URL (its secret on the answer, once)."""
    context: dict[str, Any] = {
        "endpoints": webhooks.listing(actor, domain),
        "dead_letters": webhooks.dead_letters(actor, domain),
    }
    if not actor.can_change(domain.id):
        if request.method == "POST":
            raise admin.Forbidden()
        return base.render("console/webhooks.html", form=None, **context)
    form = WebhookForm()

    def create() -> Response:
        endpoint, secret = webhooks.create_webhook(actor, domain, form.values())
        return base.render("console/secret.html", kind="webhook", record=endpoint, secret=secret)

    return base.form_page(form, "console/webhooks.html", create, **context)


@bp.route("/domains/<domain_id>/webhooks/<webhook_id>/rotate", methods=["GET", "POST"])
@console_page
def rotate_webhook_secret(actor: admin.Actor, domain: Domain, webhook_id: str) -> Response:
    endpoint = webhooks.of_domain(actor, domain, webhook_id)
    base.require_change(actor, domain)
    overlap = _duration(settings().webhook_secret_overlap)

    def rotate() -> Response:
        secret = webhooks.rotate_webhook_secret(actor, endpoint)
        return base.render("console/secret.html", kind="webhook", record=endpoint, secret=secret, rotated=True)

    return base.confirm(
        f"Rotate the secret of {endpoint.url}?",
        f"A new secret is shown once. For {overlap} every delivery is signed "
        "by the new secret and the current one, so the receiver may switch whenever it is ready; then by the new "
        "one only.",
        "Rotate secret",
        _back(domain),
        rotate,
        warning="A rotation during a rotation ends the older secret's overlap: only the current and the new sign.",
    )


@bp.route("/domains/<domain_id>/webhooks/<webhook_id>/delete", methods=["GET", "POST"])
@console_page
def delete_webhook(actor: admin.Actor, domain: Domain, webhook_id: str) -> Response:
    endpoint = webhooks.of_domain(actor, domain, webhook_id)
    base.require_change(actor, domain)

    def delete() -> Response:
        webhooks.delete_webhook(actor, endpoint)
        flash(f"Webhook {webhook_id} deleted.")
        return redirect(_back(domain), 303)

    return base.confirm(
        f"Delete the webhook to {endpoint.url}?",
        f"{endpoint.url} gets no further events, nor those queued for it.",
        "Delete webhook",
        _back(domain),
        delete,
    )


@bp.route("/domains/<domain_id>/webhooks/dead_letters/<delivery_id>/replay", methods=["GET", "POST"])
@console_page
def replay_dead_letter(actor: admin.Actor, domain: Domain, delivery_id: str) -> Response:
    base.require_change(actor, domain)
    if delivery_id not in {letter["id"] for letter in webhooks.dead_letters(actor, domain)}:
        raise admin.NotFound()

    def replay() -> Response:
        webhooks.replay(actor, domain, delivery_id)
        flash(f"Delivery {delivery_id} is tried again.")
        return redirect(_back(domain), 303)

    return base.confirm(
        f"Replay delivery {delivery_id}?",
        "It is tried again from now, with its webhook-id, signed by the webhook's current secrets.",
        "Replay",
        _back(domain),
        replay,
    )
