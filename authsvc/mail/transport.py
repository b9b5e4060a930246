"""Where a message goes: an SMTP server (``AUTHSVC_SMTP_URL``) or, in development without one, a file.

Every wait on the SMTP server (connecting, each command, TLS) ends after
``AUTHSVC_MAIL_TIMEOUT`` seconds: smtplib's socket timeout applies to each.
"""

from __future__ import annotations

import functools
import logging
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from config.settings import INSTANCE_DIR, Settings

log = logging.getLogger(__name__)

# Where development keeps the messages it would have sent.
MAIL_DIR = INSTANCE_DIR / "mail"


class Transport(Protocol):
    def send(self, message: EmailMessage) -> None: ...


class Refused(Exception):  # noqa: N818 - what the server said
    """The server refused the message for good (a 5xx answer): trying again would not help."""


@dataclass(frozen=True)
class Smtp:
    """An SMTP server: ``smtp://[user:password@]host:port`` (``?starttls=true``) or ``smtps://``."""

    host: str
    port: int
    implicit_tls: bool
    starttls: bool
    username: str | None
    password: str | None
    timeout: float

    @classmethod
    def from_url(cls, url: str, timeout: float) -> Smtp:
        parts = urlsplit(url)
        implicit_tls = parts.scheme == "smtps"
        starttls = parse_qs(parts.query).get("starttls", ["false"])[-1].lower() == "true"
        return cls(
            host=parts.hostname or "",
            port=parts.port or (465 if implicit_tls else 25),
            implicit_tls=implicit_tls,
            starttls=starttls,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            timeout=timeout,
        )

    def send(self, message: EmailMessage) -> None:
        # Imported at the first message sent over SMTP, not by every worker (docs/performance.md, "Memory by role").
        import smtplib

        server: smtplib.SMTP
        if self.implicit_tls:
            server = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=_tls())
        else:
            server = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        try:
            if self.starttls:
                server.starttls(context=_tls())
            if self.username:
                server.login(self.username, self.password or "")
            try:
                server.send_message(message)
            except smtplib.SMTPRecipientsRefused as exc:
                codes = [code for code, _ in exc.recipients.values()]
                if all(code >= 500 for code in codes):
                    raise Refused(f"the server refused the recipient ({codes[0]})") from None
                raise
            except smtplib.SMTPDataError as exc:
                if exc.smtp_code >= 500:
                    raise Refused(f"the server refused the message ({exc.smtp_code})") from None
                raise
        finally:
            try:
                server.quit()
            except (smtplib.SMTPException, OSError):
                server.close()


@functools.cache
def _tls() -> ssl.SSLContext:
    """The system's trusted certificates, loaded once (a tenth of a second): the server's certificate and name
    are checked."""
    return ssl.create_default_context()


@dataclass(frozen=True)
class MailDirectory:
    """Development without SMTP: each message is a ``.eml`` file a person can open, named in the log."""

    directory: Path

    def send(self, message: EmailMessage) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = message["Message-ID"].strip("<>").split("@")[0]
        path = self.directory / f"{name}.eml"
        path.write_bytes(bytes(message))
        log.info("e-mail to %s (%s) written to %s", message["To"], message["Subject"], path)


def transport(config: Settings) -> Transport | None:
    """How this instance sends e-mail, or None: production without an SMTP server sends none."""
    if config.smtp_url:
        return Smtp.from_url(config.smtp_url, config.mail_timeout)
    if config.environment == "development":
        return MailDirectory(MAIL_DIR)
    return None
