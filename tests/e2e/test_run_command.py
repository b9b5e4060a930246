"""The README's run command: embedded defaults, a seeded demo, data kept across runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.helpers.servers import ROOT, free_port

pytestmark = pytest.mark.slow


def start(instance: Path, port: int) -> tuple[subprocess.Popen, dict]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(instance)),
        "PORT": str(port),
        "AUTHSVC_INSTANCE_DIR": str(instance),
    }
    process = subprocess.Popen(
        [str(ROOT / "scripts/run")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    credentials = None
    deadline = time.monotonic() + 120
    for line in process.stdout:
        if line.startswith("{"):
            credentials = json.loads(line)
        if line.startswith("Serving on"):
            break
        assert time.monotonic() < deadline
    assert credentials, "the run command printed no demo credentials"
    while True:
        try:
            requests.get(f"http://127.0.0.1:{port}/", timeout=1)
            return process, credentials
        except (requests.ConnectionError, requests.Timeout):
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
            time.sleep(0.2)


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


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


def test_the_run_command_serves_the_seeded_demo_and_keeps_its_data(tmp_path):
    port = free_port()
    process, first = start(tmp_path, port)
    try:
        token = password_grant(port, first)
        assert token.status_code == 200, token.text
        # 127.0.0.1 reaches the demo domain too (it is the default domain).
        inspect = requests.get(
            f"http://127.0.0.1:{port}/api/engine/v2/api_keys/inspect",
            headers={"Authorization": f"Bearer {token.json()['access_token']}"},
            timeout=10,
        )
        assert inspect.status_code == 200
    finally:
        stop(process)
    assert (tmp_path / "authsvc.sqlite3").exists()

    process, second = start(tmp_path, port)
    try:
        assert second == first
        assert password_grant(port, second).status_code == 200
        assert (
            requests.get(
                f"http://localhost:{port}/api/engine/v2/api_keys/inspect",
                headers={"Authorization": f"Bearer {token.json()['access_token']}"},
                timeout=10,
            ).status_code
            == 200
        ), "the token of the first run is still known"
    finally:
        stop(process)
