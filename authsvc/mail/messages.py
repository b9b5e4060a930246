"""Messages: composed from a template pair (mail/NAME.txt and mail/NAME.html), queued in the outbox.

A message is composed when it is queued, in the transaction of the change
that causes it, and stored whole (encrypted, authsvc.outbox); the sender only
sends it. Its ``Message-ID`` is made then too, so that a message tried again
is the same message to the server and to the reader's client.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
from email.message import EmailMessage
from typing import Any

from flask import Flask, render_template

from authsvc import outbox
from authsvc.core.models import Domain
from authsvc.core.settings import settings
from authsvc.mail import transport as transports
from authsvc.outbox import sender
from authsvc.outbox.models import OutboxItem

KIND = "mail"
EXTENSION = "authsvc.mail"


def init_app(app: Flask) -> None:
    """Send this app's messages where its settings say; with nowhere to send them, claim none."""
    chosen = transports.transport(settings(app))
    app.extensions[EXTENSION] = chosen
    if chosen is not None:
        sender.handlers(app).register(KIND, lambda item: _send(chosen, item))


def available(app: Flask | None = None) -> bool:
    """Whether this instance can send e-mail (an SMTP server, or development's mail directory)."""
    from flask import current_app

    return (app or current_app).extensions.get(EXTENSION) is not None


def sender_address(domain: Domain) -> str:
    return settings().mail_from or f"no-reply@{domain.host}"


def compose(domain: Domain, to: str, template: str, subject: str, **context: Any) -> EmailMessage:
    """A message to ``to`` with a text part and an HTML part, both rendered from ``template``."""
    context = {"domain": domain, **context}
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = email.utils.formataddr((domain.name, sender_address(domain)))
    message["To"] = to
    message["Date"] = email.utils.formatdate(localtime=False)
    message["Message-ID"] = email.utils.make_msgid(domain=domain.host)
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(render_template(f"mail/{template}.txt", **context))
    message.add_alternative(render_template(f"mail/{template}.html", **context), subtype="html")
    return message


def queue(domain: Domain, to: str, template: str, subject: str, **context: Any) -> OutboxItem:
    """Compose a message and add it to the caller's transaction: it is sent once, and only if, that commits."""
    message = compose(domain, to, template, subject, **context)
    return outbox.queue(KIND, message.as_string(policy=email.policy.SMTP), domain_id=domain.id)


def _send(chosen: transports.Transport, item: OutboxItem) -> None:
    message = email.message_from_string(item.read(), _class=EmailMessage, policy=email.policy.default)
    try:
        chosen.send(message)
    except transports.Refused as exc:
        raise sender.GiveUp(str(exc)) from None
