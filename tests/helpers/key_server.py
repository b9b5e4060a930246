"""An application's jwks_uri on loopback, for the tests of keyed applications (tests/e2e and tests/api/par_jar)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.helpers import QUICK_SHUTDOWN


class KeyServer:
    """An application's jwks_uri on loopback: serves ``jwks``, or hangs when ``hang`` is set."""

    def __init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.fetches += 1
                if server.hang:
                    time.sleep(3)
                data = json.dumps(server.jwks).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/jwks"
        self.jwks: dict = {}
        self.fetches = 0
        self.hang = False

    def serve(self, *keys) -> None:
        self.jwks = {"keys": [key.as_dict(private=False) for key in keys]}


@pytest.fixture
def key_server() -> Iterator[KeyServer]:
    server = KeyServer()
    threading.Thread(target=server.http.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()
    yield server
    server.http.shutdown()
    server.http.server_close()
