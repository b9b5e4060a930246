"""Real servers for end-to-end tests: the service under gunicorn, started as a deployment starts it.

The processes themselves are started and stopped by ``devtools.services``, as
the test command and the benchmark start theirs.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from devtools.services import REPO as ROOT
from devtools.services import Gunicorn, Process, free_port
from tests.conftest import DATABASE_URL, _redis_url


class Service:
    """A running service: its URL, its environment, and the CLI against its database."""

    def __init__(self, port: int, env: dict, process: Process):
        self.url = f"http://127.0.0.1:{port}"
        self.env = env
        self.process = process

    def output(self) -> str:
        """Everything the service wrote to stdout and stderr so far (its JSON log lines)."""
        return self.process.output()

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
from authsvc import create_app
from authsvc.core import store
from authsvc.core.database import db
app = create_app()
with app.app_context():
    for table in reversed(db.metadata.sorted_tables):
        db.session.execute(table.delete())
    db.session.commit()
    store.client().flushdb()
"""


@contextmanager
def running_service(instance_dir: Path, **extra_env: str) -> Iterator[Service]:
    """Start the Procfile web line (2 workers, on loopback) on the test database and store, empty; stop it after.

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
    server = Gunicorn("authsvc", port, env, instance_dir / f"service-{port}.log")
    try:
        server.start()
        service = Service(port, env, server.process)
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(service.url + "/", timeout=1)
                break
            except (requests.ConnectionError, requests.Timeout):
                # A read timeout under load means "not ready yet", like a refused connection.
                if not server.process.alive() or time.monotonic() > deadline:
                    raise AssertionError("gunicorn did not start:\n" + service.output()) from None
                time.sleep(0.2)
        yield service
    finally:
        server.stop()
