"""Fixtures of the self-service tests: a real SMTP server on loopback (aiosmtpd), an app that mails
through it, and a person enrolled in MFA."""

from __future__ import annotations

from tests.helpers import mfa
from tests.helpers import smtp as mail

smtp_server = mail.smtp_server
smtp = mail.smtp
mail_app = mail.mail_app
enrolled = mfa.enrolled
