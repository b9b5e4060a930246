"""Headless Chromium (Debian's package) driven by Playwright, and a tiny client application on loopback."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

import pytest
import requests

from tests.helpers import QUICK_SHUTDOWN

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As the machine's notes advise: no background traffic to Google, no sandbox as root.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[object]:
    """A Playwright browser on Debian's chromium; skips the test if it is not installed."""
    if not shutil.which("chromium"):
        pytest.skip("Debian's chromium is not installed (scripts/test installs it when it can)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


class ClientApplication:
    """A client application: a page with a sign-in link, and a callback that shows what it received."""

    def __init__(self) -> None:
        app = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.startswith("/callback"):
                    app.callbacks.append(self.path)
                    body = f"<h1>Callback</h1><p id=query>{self.path}</p>"
                else:
                    body = f'<h1>Client</h1><a id=signin href="{app.authorize_url}">Sign in with authsvc</a>'
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.redirect_uri = self.url + "/callback"
        self.callbacks: list[str] = []
        self.authorize_url = ""

    def link_to(self, service_url: str, **params: str) -> None:
        self.authorize_url = f"{service_url}/auth/oauth/authorize?{urlencode(params)}"

    def __enter__(self) -> ClientApplication:
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def exchange_and_inspect(service, client_id: str, code: str, redirect_uri: str, verifier: str) -> dict:
    token = requests.post(
        service.url + "/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        },
        timeout=10,
    )
    assert token.status_code == 200, token.text
    inspect = requests.get(
        service.url + "/api/engine/v2/api_keys/inspect",
        headers={"Authorization": f"Bearer {token.json()['access_token']}"},
        timeout=10,
    )
    assert inspect.status_code == 200
    return inspect.json()
