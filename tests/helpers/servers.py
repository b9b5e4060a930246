"""Real servers for end-to-end tests: the service under gunicorn, started as a deployment starts it.

The processes themselves are started and stopped by ``devtools.services``, as
the test command and the benchmark start theirs.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests
from flask import Flask

from authsvc import create_app
from authsvc.core import store
from authsvc.core.database import db
from devtools.services import REPO as ROOT
from devtools.services import Gunicorn, Process, free_port
from tests.helpers import DATABASE_URL, redis_url


@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``env`` on top for the block: the settings an app of the service reads."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class Service:
    """A running service: its URL, its environment, and the CLI against its database.

    The CLI runs in the test's process, on an app built from the service's
    environment as ``flask --app app`` builds it: the same commands, database
    and store, without the 2-3 s of a new interpreter for each call.
    """

    def __init__(self, port: int, env: dict, process: Process):
        self.url = f"http://127.0.0.1:{port}"
        self.env = env
        self.process = process
        self._app: Flask | None = None

    def output(self) -> str:
        """Everything the service wrote to stdout and stderr so far (its JSON log lines)."""
        return self.process.output()

    def cli(self, *args: str) -> dict:
        with environment(self.env):
            if self._app is None:
                self._app = create_app()
            result = self._app.test_cli_runner().invoke(args=list(args))
            with self._app.app_context():
                db.engine.dispose()  # no connection of the tests' left open beside the service's
        problem = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
        assert result.exit_code == 0, result.output + problem
        return json.loads(result.stdout)


def _empty_tables_and_store(env: dict[str, str]) -> None:
    with environment(env):
        app = create_app()
        with app.app_context():
            for table in reversed(db.metadata.sorted_tables):
                db.session.execute(table.delete())
            db.session.commit()
            store.client().flushdb()
            db.engine.dispose()


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
        # The test machine is shared: a request may wait a second for a worker there with nothing
        # overloaded. Shedding is tested with its own bound (tests/e2e/test_overload.py).
        "AUTHSVC_QUEUE_TIMEOUT": "10",
    }
    if redis_url():
        env["REDIS_URL"] = redis_url()
    env.update(extra_env)
    _empty_tables_and_store(env)
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
