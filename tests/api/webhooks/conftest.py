"""Fixtures of the webhook tests: a receiver on loopback and an app that may reach it (tests/helpers/webhooks.py)."""

from __future__ import annotations

from tests.helpers import webhooks

app = webhooks.app
receiver = webhooks.receiver
