"""The metadata-document client's row: a Client ID Metadata Document served by the benchmark on loopback, and
codes minted for that client beforehand, so that the row measures the code exchange alone.

The document is plain http on 127.0.0.1 (the bench domain has the private-network exception, which allows it
on loopback only) with ``Cache-Control: max-age=86400``: the service fetches it at the first authorisation
request and keeps its row for the whole run, so every exchange finds the document cached. Such a client always
gets the consent page; a code is minted by approving it (one consent page read per batch for its CSRF token,
then one approving POST per code, one connection per gunicorn worker; a 503 of a busy machine is retried).
Its PKCE verifier is the same for every code.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from bench import BenchError, seed

PATH = "/bench/client.json"
VERIFIER = "bench-metadata-document-verifier-0123456789abcdef"
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()
RETRIES = 10
_CSRF = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


class DocumentServer:
    """The client's document at ``url``, served from a thread of the benchmark's process until it exits."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer((seed.HOST, 0), self._handler())
        self.url = f"http://{seed.HOST}:{self.server.server_address[1]}{PATH}"
        self.fetched = 0
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        documents = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                documents.fetched += 1
                body = json.dumps(documents.document()).encode() if self.path == PATH else b""
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "max-age=86400")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def document(self) -> dict:
        return {
            "client_id": self.url,
            "client_name": "Bench metadata document client",
            "redirect_uris": [seed.REDIRECT_URI],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }

    def authorize_path(self) -> str:
        query = {
            "response_type": "code",
            "client_id": self.url,
            "redirect_uri": seed.REDIRECT_URI,
            "scope": "public",
            "code_challenge": CHALLENGE,
            "code_challenge_method": "S256",
        }
        return f"/auth/oauth/authorize?{urlencode(query)}"

    def exchange_body(self) -> str:
        """The exchange's form, as a public client sends it (PKCE); the code goes last."""
        return (
            f"grant_type=authorization_code&client_id={quote(self.url, safe='')}"
            f"&redirect_uri={quote(seed.REDIRECT_URI, safe='')}&code_verifier={VERIFIER}&code="
        )

    def mint_codes(self, port: int, user_cookie: str, count: int, connections: int) -> list[str]:
        """``count`` codes for the client, each approved on its consent page by the signed-in person."""
        path = self.authorize_path()
        shares = [count // connections + (1 if i < count % connections else 0) for i in range(connections)]
        with ThreadPoolExecutor(connections) as pool:
            batches = list(pool.map(lambda n: self._approve(port, user_cookie, path, n), shares))
        return [code for batch in batches for code in batch]

    @staticmethod
    def _approve(port: int, user_cookie: str, path: str, count: int) -> list[str]:
        conn = http.client.HTTPConnection(seed.HOST, port, timeout=30)
        cookies = {"user": user_cookie}

        def send(method: str, body: str | None = None) -> tuple[int, str, http.client.HTTPResponse]:
            headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
            if body is not None:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            for attempt in range(RETRIES):
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                text = response.read().decode(errors="replace")
                if response.status != 503:
                    break
                time.sleep(0.5 * (attempt + 1))  # queued over AUTHSVC_QUEUE_TIMEOUT on a busy machine
            for line in response.headers.get_all("Set-Cookie") or []:
                name, _, value = line.split(";", 1)[0].partition("=")
                cookies[name.strip()] = value.strip()
            return response.status, text, response

        try:
            if count == 0:
                return []
            status, page, _ = send("GET")
            token = _CSRF.search(page)
            if status != 200 or token is None:
                raise BenchError(f"the metadata document client's consent page answered {status}: {page[:300]}")
            form = urlencode({"csrf_token": token.group(1), "approve": "1"})
            codes = []
            for _ in range(count):
                status, text, response = send("POST", form)
                location = response.headers.get("Location", "")
                code = parse_qs(urlsplit(location).query).get("code")
                if status != 302 or not code:
                    raise BenchError(f"approving the metadata document client answered {status}: {text[:300]}")
                codes.append(code[0])
            return codes
        finally:
            conn.close()
