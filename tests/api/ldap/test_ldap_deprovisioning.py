"""Deprovisioning through the directory: an entry disabled or removed there ends the user's
sessions and tokens at the next check (every AUTHSVC_LDAP_RECHECK seconds), and a refresh asks again."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.database import db
from authsvc.core.models import AuditRecord
from tests.helpers import headers
from tests.helpers.ldap import INSPECT, access_token, directory_browser, signin, tokens

pytestmark = pytest.mark.slow


def test_a_disabled_entry_ends_the_users_sessions_and_tokens_on_the_next_check(make_app, setup, directory):
    app, client = directory_browser(make_app, directory, AUTHSVC_LDAP_RECHECK=0)
    directory.add_person("dora", "dora@example.com", "dora-password", "Dora Leaving")
    try:
        assert signin(client, "dora@example.com", "dora-password").status_code == 202
        assert "Sign out" in client.get("/auth/login", headers=headers()).get_data(as_text=True)
        token = access_token(client, setup.public_app.client_id)
        assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 200
        directory.set_account_control("dora", 514)
        page = client.get("/auth/login", headers=headers()).get_data(as_text=True)
        assert "Sign out" not in page and 'name="password"' in page
        assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 401
        with app.app_context():
            [record] = db.session.scalars(select(AuditRecord).where(AuditRecord.event == "ldap.deprovisioned"))
            assert record.details["reason"] == "disabled"
        assert signin(client, "dora@example.com", "dora-password").status_code == 401
        # Enabled again, the entry signs in again: the directory decides, nothing was disabled here.
        directory.set_account_control("dora", 512)
        assert signin(client, "dora@example.com", "dora-password").status_code == 202
    finally:
        directory.delete("dora")


def test_an_entry_removed_from_the_directory_cannot_sign_in_and_its_session_ends(make_app, setup, directory):
    _, client = directory_browser(make_app, directory, AUTHSVC_LDAP_RECHECK=0)
    directory.add_person("erin", "erin@example.com", "erin-password", "Erin Removed")
    assert signin(client, "erin@example.com", "erin-password").status_code == 202
    directory.delete("erin")
    assert "Sign out" not in client.get("/auth/login", headers=headers()).get_data(as_text=True)
    assert signin(client, "erin@example.com", "erin-password").status_code == 401


def test_a_refresh_asks_the_directory_again(make_app, setup, directory):
    _, client = directory_browser(make_app, directory, AUTHSVC_LDAP_RECHECK=0)
    directory.add_person("gus", "gus@example.com", "gus-password", "Gus Refreshing")
    try:
        assert signin(client, "gus@example.com", "gus-password").status_code == 202
        refresh_token = tokens(client, setup.public_app.client_id)["refresh_token"]
        body = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": setup.public_app.client_id}
        directory.set_account_control("gus", 514)
        refused = client.post("/auth/oauth/token", data=body, headers=headers())
        assert refused.status_code == 400, refused.get_json()
        assert "access_token" not in refused.get_json()
    finally:
        directory.delete("gus")


def test_the_session_is_not_rechecked_before_the_interval(make_app, setup, directory):
    _, client = directory_browser(make_app, directory, AUTHSVC_LDAP_RECHECK=3600)
    directory.add_person("fred", "fred@example.com", "fred-password", "Fred Cached")
    try:
        assert signin(client, "fred@example.com", "fred-password").status_code == 202
        directory.set_account_control("fred", 514)
        assert "Sign out" in client.get("/auth/login", headers=headers()).get_data(as_text=True)
    finally:
        directory.delete("fred")
