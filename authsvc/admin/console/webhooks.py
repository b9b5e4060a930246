"""The console's webhooks page: the domain's webhooks (subscribed through the admin API or the command line,
docs/events.md) and the deliveries given up, each to replay."""

from __future__ import annotations

from flask import flash, redirect, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin import webhooks
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.core.models import Domain


@bp.get("/domains/<domain_id>/webhooks")
@console_page
def webhooks_page(actor: admin.Actor, domain: Domain) -> Response:
    return base.render(
        "console/webhooks.html",
        endpoints=webhooks.listing(actor, domain),
        dead_letters=webhooks.dead_letters(actor, domain),
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
        return redirect(url_for("console.webhooks_page", domain_id=domain.id), 303)

    return base.confirm(
        f"Replay delivery {delivery_id}?",
        "It is tried again from now, with its webhook-id, signed by the webhook's current secrets.",
        "Replay",
        url_for("console.webhooks_page", domain_id=domain.id),
        replay,
    )
