"""The README's run command: embedded defaults, a seeded demo, data and sessions kept across runs.

What it prints is what a newcomer reads first: readable lines, one line for the migrations, the
"no Redis" warning once, and the demo block last before "Serving on".
"""

from __future__ import annotations

import re

import pytest
import requests

from tests.helpers import in_one_pass
from tests.helpers.run_command import start, stop
from tests.helpers.servers import free_port

# ./scripts/run's own service (SQLite and the in-process store, in an instance directory of its own), whatever
# the pass: run once when both run.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]


def password_grant(port: int, credentials: dict) -> requests.Response:
    return requests.post(
        f"http://localhost:{port}/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": credentials["username"],
            "password": credentials["password"],
            "client_id": credentials["client_id"],
        },
        timeout=10,
    )


def authorize(port: int, credentials: dict, cookies) -> requests.Response:
    """The code flow's authorisation request with the session in ``cookies``: 302 with a code while it lives."""
    return requests.get(
        f"http://localhost:{port}/auth/oauth/authorize",
        params={
            "response_type": "code",
            "client_id": credentials["client_id"],
            "redirect_uri": "http://localhost:8080/callback",
            "scope": "openid",
        },
        cookies=cookies,
        allow_redirects=False,
        timeout=10,
    )


def assert_a_readable_first_start(lines: list[str], port: int) -> None:
    """Text, not JSON; the migrations in one line; the demo block last before "Serving on"; one Redis warning."""
    serving = next(i for i, line in enumerate(lines) if line.startswith("Serving on"))
    before = lines[:serving]
    assert not [line for line in lines if line.startswith("{")]
    assert [line for line in before if "migration" in line] == [before[0]]
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d info    authsvc\.migrations: database: \d+ migrations applied, now at \w+", before[0]
    )
    assert before[1].startswith("Demo (embedded defaults") and len(before) == 2 + 7
    # The "no Redis" warning: once, from the service; none from the flask commands before it.
    assert len([line for line in lines if "REDIS_URL is not set" in line]) == 1
    assert lines[serving] == f"Serving on http://localhost:{port}"


def test_the_run_command_serves_the_seeded_demo_and_keeps_its_data_and_sessions(tmp_path):
    port = free_port()
    run = start(tmp_path, port)
    try:
        first = run.credentials()
        token = password_grant(port, first)
        assert token.status_code == 200, token.text
        # 127.0.0.1 reaches the demo domain too (it is the default domain).
        inspect = requests.get(
            f"http://127.0.0.1:{port}/api/engine/v2/api_keys/inspect",
            headers={"Authorization": f"Bearer {token.json()['access_token']}"},
            timeout=10,
        )
        assert inspect.status_code == 200
        signed_in = requests.post(
            f"http://localhost:{port}/auth/signin",
            data={"email": first["person"], "password": first["person_password"]},
            timeout=10,
        )
        assert signed_in.status_code == 202, signed_in.text
        assert authorize(port, first, signed_in.cookies).status_code == 302
        assert requests.get(f"http://localhost:{port}/readyz", timeout=10).json()["checks"]["redis"] == "in-process"
    finally:
        stop(run)
    assert_a_readable_first_start(run.lines, port)
    assert (tmp_path / "authsvc.sqlite3").exists()
    assert (tmp_path / "store.json").stat().st_mode & 0o777 == 0o600

    run = start(tmp_path, port)
    try:
        assert run.credentials() == first
        assert password_grant(port, first).status_code == 200
        assert (
            requests.get(
                f"http://localhost:{port}/api/engine/v2/api_keys/inspect",
                headers={"Authorization": f"Bearer {token.json()['access_token']}"},
                timeout=10,
            ).status_code
            == 200
        ), "the token of the first run is still known"
        # The person's session of the first run still signs them in: the store was kept too.
        kept = authorize(port, first, signed_in.cookies)
        assert kept.status_code == 302 and "code=" in kept.headers["Location"], kept.headers.get("Location")
    finally:
        stop(run)
    assert any("database: up to date" in line for line in run.lines)
