"""Messages: composed from a template pair (mail/NAME.txt and mail/NAME.html), queued in the outbox.

Each part is put in its layout (mail/_layout.txt and mail/_layout.html): the
domain's brand (authsvc.core.branding) around every message, its name and
logo above, its support, privacy and terms links below; a message's own
template holds only what it says.

A message is written in the language its caller names (the recipient's, which
authsvc.web.i18n.for_message decides): its subject and both parts are rendered
with that catalog (docs/translations.md).

A message is composed when it is queued, in the transaction of the change
that causes it, and stored whole (encrypted, authsvc.outbox); the sender only
sends it. Its ``Message-ID`` is made then too, so that a message tried again
is the same message to the server and to the reader's client.
"""

from __future__ import annotations

import email
import email.utils
from email.message import EmailMessage
from typing import Any

from flask import Flask, has_request_context, render_template, url_for
from flask_babel import force_locale

from authsvc import outbox
from authsvc.core.branding import Brand, brand_of
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


def compose(domain: Domain, to: str, template: str, subject: Any, locale: str = "en", **context: Any) -> EmailMessage:
    """A message to ``to`` in ``locale``, with a text part and an HTML part, both rendered from ``template``.

    ``subject`` and the context's values may be lazy strings (flask_babel.lazy_gettext): they are
    made text in ``locale``, as the parts are.
    """
    with force_locale(locale):
        return _compose(domain, to, template, str(subject), **context)


def _compose(domain: Domain, to: str, template: str, subject: str, **context: Any) -> EmailMessage:
    context = {"domain": domain, **context}
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = email.utils.formataddr((domain.name, sender_address(domain)))
    message["To"] = to
    message["Date"] = email.utils.formatdate(localtime=False)
    message["Message-ID"] = email.utils.make_msgid(domain=domain.host)
    message["Auto-Submitted"] = "auto-generated"
    brand = brand_of(domain)
    layout = {"brand": brand, "brand_name": brand.display_name or domain.name, "logo_url": _logo_url(domain, brand)}
    message.set_content(render_template("mail/_layout.txt", body=f"mail/{template}.txt", **context, **layout))
    html = render_template("mail/_layout.html", body=f"mail/{template}.html", **context, **layout)
    message.add_alternative(html, subtype="html")
    return message


def _logo_url(domain: Domain, brand: Brand) -> str | None:
    """The logo's absolute URL on our own host (a mail reader fetches it from there), or None."""
    if brand.logo_digest is None:
        return None
    if has_request_context():
        return url_for("branding.logo", v=brand.logo_digest, _external=True)
    return f"https://{domain.host}/auth/branding/logo?v={brand.logo_digest}"


def queue(domain: Domain, to: str, template: str, subject: Any, locale: str = "en", **context: Any) -> OutboxItem:
    """Compose a message (in ``locale``) and add it to the caller's transaction: it is sent once, and only if,
    that commits."""
    # email.policy brings the header parser and registry (about half a megabyte) that only messages use: imported
    # with the first message, not by a worker that sends none (docs/performance.md, "Memory by role").
    import email.policy

    message = compose(domain, to, template, subject, locale, **context)
    return outbox.queue(KIND, message.as_string(policy=email.policy.SMTP), domain_id=domain.id)


def _send(chosen: transports.Transport, item: OutboxItem) -> None:
    import email.policy  # as in ``queue``

    message = email.message_from_string(item.read(), _class=EmailMessage, policy=email.policy.default)
    try:
        chosen.send(message)
    except transports.Refused as exc:
        raise sender.GiveUp(str(exc)) from None
