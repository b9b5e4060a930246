"""Real servers for end-to-end tests: the service under gunicorn, started as a deployment starts it."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.conftest import DATABASE_URL, _redis_url

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def web_command() -> list[str]:
    """The Procfile's web line, as a deployment runs it."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith("web:"):
            return shlex.split(line.removeprefix("web:"))
    raise AssertionError("Procfile has no web line")


class Service:
    """A running service: its URL, its environment, and the CLI against its database."""

    def __init__(self, port: int, env: dict, process: subprocess.Popen, log_path: Path):
        self.url = f"http://127.0.0.1:{port}"
        self.env = env
        self.process = process
        self.log_path = log_path

    def output(self) -> str:
        """Everything the service wrote to stdout and stderr so far (its JSON log lines)."""
        return self.log_path.read_text(errors="replace")

    def cli(self, *args: str) -> dict:
        result = subprocess.run(
            [str(ROOT / ".venv/bin/flask"), "--app", "app", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)


_EMPTY_TABLES_AND_STORE = """
from authsvc import create_app, store
from authsvc.database import db
app = create_app()
with app.app_context():
    for table in reversed(db.metadata.sorted_tables):
        db.session.execute(table.delete())
    db.session.commit()
    store.client().flushdb()
"""


@contextmanager
def running_service(instance_dir: Path, **extra_env: str) -> Iterator[Service]:
    """Start the Procfile web line (2 workers) on the test database and store, empty; stop it after.

    ``extra_env`` adds to or overrides the environment (DATABASE_URL, REDIS_URL and settings included).
    """
    port = free_port()
    env = {
        "PATH": f"{ROOT / '.venv/bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PORT": str(port),
        "WEB_CONCURRENCY": "2",
        "DATABASE_URL": DATABASE_URL,
        "SECRET_KEY": secrets.token_urlsafe(32),
        "AUTHSVC_COOKIE_SECURE": "false",
        "AUTHSVC_BCRYPT_ROUNDS": "4",
        "AUTHSVC_INSTANCE_DIR": str(instance_dir),
    }
    if _redis_url():
        env["REDIS_URL"] = _redis_url()
    env.update(extra_env)
    subprocess.run([sys.executable, "-c", _EMPTY_TABLES_AND_STORE], cwd=ROOT, env=env, check=True, timeout=60)
    # A file, not a pipe: nobody reads a pipe while the service runs, and a
    # full one would block the service on its next log line.
    log_path = instance_dir / f"service-{port}.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            web_command(), cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    service = Service(port, env, process, log_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(service.url + "/", timeout=1)
                break
            except (requests.ConnectionError, requests.Timeout):
                # A read timeout under load means "not ready yet", like a refused connection.
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("gunicorn did not start:\n" + service.output()) from None
                time.sleep(0.2)
        yield service
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
