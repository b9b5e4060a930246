"""A peer on loopback that answers HTTP the slow or the large way, for the outbound deadline's tests.

``SlowPeer(trickle=0.2)`` sends its whole answer (status line and headers
included) one byte every 0.2 s: each read waits less than any per-read
timeout, so only a deadline on the whole exchange ends it. It gives up after
``for_seconds`` (the test's bound when there is no deadline to cut it off).
``SlowPeer(size=n)`` answers at once with a JSON body of ``n`` bytes.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time

from tests.helpers import QUICK_SHUTDOWN


class SlowPeer:
    def __init__(self, *, trickle: float | None = None, size: int = 2, for_seconds: float = 6.0):
        self.trickle, self.size, self.for_seconds = trickle, size, for_seconds
        self.requests: list[float] = []  # when each request arrived (time.monotonic)
        self.stopped = threading.Event()
        peer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                peer._answer(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/peer"
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            _read_request(conn)
            self.requests.append(time.monotonic())
            body = b'{"pad": "' + b"x" * max(0, self.size - 11) + b'"}'
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            if self.trickle is None:
                conn.sendall(head.encode() + b"\r\n" + body)
                return
            # Headers that never end within the test: each byte comes well inside any read timeout.
            answer = head.encode() + b"X-Pad: " + b"a" * 1000 + b"\r\n\r\n" + body
            ends = time.monotonic() + self.for_seconds
            for byte in answer:
                if self.stopped.is_set() or time.monotonic() > ends:
                    return
                conn.sendall(bytes([byte]))
                self.stopped.wait(self.trickle)
        except OSError:
            pass  # the client went away (cut off at its deadline)
        finally:
            conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> SlowPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_request(conn: socket.socket) -> None:
    """Read the request line, headers and a Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk
