"""Fixtures of the end-to-end tests: panva's openid-client, installed once; a real SMTP server on loopback."""

from __future__ import annotations

from tests.helpers import relying_party, smtp

openid_client = relying_party.openid_client
smtp_server = smtp.smtp_server
