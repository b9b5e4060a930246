"""A trace collector that keeps nothing: an OTLP/HTTP endpoint on loopback, in a process of its own.

``bench/traced_calls.py`` exports the service's spans here, so that what tracing costs the service
(making the spans, encoding them as protobuf, POSTing them) is measured and what a collector does
with them is not. It reads each export whole and answers 200 on a kept-alive connection, as a
collector does::

    .venv/bin/python -m bench.otlp_sink    # prints its URL, serves until stopped
"""

from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Discard(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        pass


def start() -> tuple[subprocess.Popen[str], str]:
    """The sink in a new process, and its URL (OTEL_EXPORTER_OTLP_ENDPOINT); stop it with ``terminate()``.
    It stops by itself when this process ends (its standard input closes)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.otlp_sink"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def main() -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Discard)
    print(f"http://127.0.0.1:{server.server_port}", flush=True)
    if not sys.stdin.isatty():
        # Started by start(): gone with the process that started it.
        threading.Thread(target=lambda: (sys.stdin.read(), server.shutdown()), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
