"""Client metadata documents over TLS on loopback, signed by a test CA (trustme) that the service is told to
trust through SSL_CERT_FILE: what a client such as Claude or VS Code serves at its client_id URL.

Used by tests/api/oauth/test_client_metadata_documents.py and tests/e2e/test_mcp_sdk_e2e.py.
"""

from __future__ import annotations

import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme

HOST = "127.0.0.1"


class Documents:
    """An https server on loopback: path -> (body, Cache-Control); what it was asked for, in order."""

    def __init__(self, ca_file: Path) -> None:
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(ca_file))
        self.ca_file = ca_file
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(HOST).configure_cert(context)
        self.served: dict[str, tuple[bytes, str]] = {}
        self.fetched: list[str] = []
        documents = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                documents.fetched.append(self.path)
                body, cache = documents.served.get(self.path, (b"", ""))
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if cache:
                    self.send_header("Cache-Control", cache)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.base = f"https://{HOST}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, path: str, document: dict | bytes, cache: str = "max-age=600") -> str:
        """Serve ``document`` at ``path``; its URL."""
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.served[path] = (body, cache)
        return self.base + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
