"""The service's gunicorn settings serve other WSGI apps too: the benchmark's floors run with them."""

from __future__ import annotations

import pytest
import requests

from devtools.services import Gunicorn, free_port
from tests.helpers import in_one_pass

# A bare app, no database or store: the same on either pass.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]


def test_a_flask_app_without_the_outbox_boots_and_serves_under_the_service_settings(tmp_path):
    # A worker starts the outbox's sender only for an app that has one: the bare route has none.
    server = Gunicorn("bare", free_port(), {"WEB_CONCURRENCY": "1"}, tmp_path / "bare.log", target="bench.bare_app:app")
    server.start(workers=1)
    try:
        answer = requests.get(f"http://127.0.0.1:{server.port}/", timeout=10)
        assert answer.status_code == 200
        assert answer.json()["service"] == "bare"
        assert "Exception in worker process" not in (tmp_path / "bare.log").read_text()
    finally:
        server.stop()
