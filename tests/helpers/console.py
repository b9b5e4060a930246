"""The console at /auth/admin/ for the tests: who is signed in to it, and its pages and forms as a
browser gets and posts them.

Used by tests/api/admin/test_console.py, tests/api/admin/test_console_accounts.py and others that drive the console.
"""

from __future__ import annotations

import html

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord
from tests.helpers import HOST, OTHER_HOST, PASSWORD, REDIRECT_URI, headers, signin
from tests.helpers.pages import csrf_token

CONSOLE = "/auth/admin"
SECRET = r'<code id="secret" class="secret-value">([^<]+)</code>'


@pytest.fixture
def people(world, setup):
    """An admin and a support user of the domain, and another domain with its own admin and a system admin."""
    other = world.domain(OTHER_HOST)

    class People:
        admin = world.user(setup.domain, "admin@example.com", admin=True, name="Admin")
        support = world.user(setup.domain, "support@example.com", support=True, name="Support")
        other_domain = other
        other_admin = world.user(other, "admin@other.example.com", admin=True)
        root = world.user(other, "root@other.example.com", admin=True, system_admin=True)
        other_app, _ = world.application(other, name="Elsewhere")

    return People


def as_admin(client, email="admin@example.com", host=HOST):
    signin(client, email, host=host)
    return client


def get(client, path, host=HOST):
    return client.get(CONSOLE + path, headers=headers(host))


def text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def submit(client, path, data=None, host=HOST, page=None, token=None):
    """POST a console form the way a browser does: with the CSRF token of the page it came from."""
    if token is None:
        token = csrf_token(page or get(client, path, host))
    return client.post(CONSOLE + path, data={"csrf_token": token, **(data or {})}, headers=headers(host))


def audit(world, event):
    """The audit records of ``event``, in the order written (PostgreSQL keeps no order without ORDER BY)."""
    return world.query(select(AuditRecord).where(AuditRecord.event == event).order_by(AuditRecord.id))


def password_grant(client, client_id, secret=None, username="service@example.com", password=PASSWORD):
    body = {"grant_type": "password", "username": username, "password": password, "client_id": client_id}
    if secret:
        body["client_secret"] = secret
    return client.post("/auth/oauth/token", json=body, headers=headers())


def app_path(setup, application=None):
    base = f"/domains/{setup.domain.id}/applications"
    return base if application is None else f"{base}/{application.id}"


def new_application(client, setup, **fields):
    data = {"name": "Room booking", "redirect_uris": REDIRECT_URI, "scopes": "public", **fields}
    return submit(client, app_path(setup) + "/new", data)
