"""What a host name resolves to, asked when a URL the service will call is saved.

The SSRF guard (authsvc.core.outbound) checks the address on every call; this
refuses at save time a name that already points inside, so that the admin
who types it hears why at once. A resolver that does not answer in time, or a
name that does not resolve (yet), decides nothing here: the call-time check
still holds.
"""

from __future__ import annotations

import socket
import threading
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Any

TIMEOUT = 2.0
_MAX_WAITING = 8
_WAITING = threading.BoundedSemaphore(_MAX_WAITING)


def addresses(host: str, timeout: float = TIMEOUT) -> list[IPv4Address | IPv6Address]:
    """The addresses ``host`` resolves to within ``timeout`` seconds; [] when it does not (in time)."""
    # The resolver's own timeouts (resolv.conf: 5 s, retried) are longer than a save should wait: it runs
    # on a daemon thread, given up after ``timeout``; at most a few such threads wait at once.
    if not _WAITING.acquire(blocking=False):
        return []
    answer: dict[str, Any] = {}

    def resolve() -> None:
        try:
            answer["infos"] = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError):  # no such name; a label over 63 characters
            answer["infos"] = []
        finally:
            _WAITING.release()

    resolver = threading.Thread(target=resolve, name="authsvc-save-resolve", daemon=True)
    resolver.start()
    resolver.join(timeout)
    found = []
    for info in answer.get("infos", []):
        try:
            # An IPv6 address may carry its zone ("fe80::1%eth0").
            found.append(ip_address(str(info[4][0]).split("%")[0]))
        except ValueError:
            continue
    return found
