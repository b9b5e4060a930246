"""``webhooks``: a domain's signed webhooks (docs/events.md)."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from authsvc import admin
from authsvc.admin import webhooks as verbs
from authsvc.cli.common import admin_rules, domain_by_host, emit

webhooks = AppGroup("webhooks", help="Signed webhooks: URLs a domain's events are POSTed to.")


@webhooks.command("create")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--url", required=True, help="Where the events are POSTed.")
@click.option("--events", required=True, help='Event types, space-separated: "user.created user.disabled".')
def create_webhook(host: str, url: str, events: str) -> None:
    """Subscribe a URL to event types; its signing secret is printed only now."""
    with admin_rules():
        endpoint, secret = verbs.create_webhook(
            admin.command_line(), domain_by_host(host), {"url": url, "events": events.split()}
        )
    emit({"id": endpoint.id, "secret": secret})


@webhooks.command("list")
@click.option("--domain", "host", required=True)
def list_webhooks(host: str) -> None:
    """The domain's webhooks (never their secrets)."""
    emit({"webhooks": [e.as_json() for e in verbs.listing(admin.command_line(), domain_by_host(host))]})


@webhooks.command("rotate")
@click.option("--domain", "host", required=True)
@click.argument("webhook_id")
def rotate_webhook(host: str, webhook_id: str) -> None:
    """A new signing secret, printed only now; the previous one signs too for AUTHSVC_WEBHOOK_SECRET_OVERLAP."""
    actor = admin.command_line()
    with admin_rules():
        secret = verbs.rotate_webhook_secret(actor, verbs.of_domain(actor, domain_by_host(host), webhook_id))
    emit({"id": webhook_id, "secret": secret})


@webhooks.command("delete")
@click.option("--domain", "host", required=True)
@click.argument("webhook_id")
def delete_webhook(host: str, webhook_id: str) -> None:
    actor = admin.command_line()
    with admin_rules():
        verbs.delete_webhook(actor, verbs.of_domain(actor, domain_by_host(host), webhook_id))
    emit({"deleted": webhook_id})


@webhooks.command("dead-letters")
@click.option("--domain", "host", required=True)
def dead_letters(host: str) -> None:
    """Deliveries given up after AUTHSVC_WEBHOOK_GIVE_UP."""
    emit({"dead_letters": verbs.dead_letters(admin.command_line(), domain_by_host(host))})


@webhooks.command("replay")
@click.option("--domain", "host", required=True)
@click.argument("delivery_id")
def replay(host: str, delivery_id: str) -> None:
    """Try a dead-lettered delivery again."""
    with admin_rules():
        verbs.replay(admin.command_line(), domain_by_host(host), delivery_id)
    emit({"replayed": delivery_id})
