"""A process's pysaml2 SP clients, kept from request to request (``KeptClients``, used by ``saml.sp_client``).

Building a client parses our RSA private key twice (its metadata store's
security context, then the client's own): 35-75 ms a parse, most of a SAML
request's cost. A kept client is found by a digest of everything it was built
from (the provider's id, name, key, certificate, IdP metadata and clock skew,
our host, whether it takes unsolicited responses, the xmlsec1 binary): a
changed key, a refreshed metadata (an IdP's certificate rollover) or any other
setting builds a new one at once, so no request trusts what the provider no
longer says. At most ``SIZE`` are kept, the least recently used going first.

Our key stays on disk (0600, in a private directory of the kept client) only
while a request uses the client, as before: xmlsec1, which signs and decrypts,
reads keys from files. Each request gets a copy of the client with its own
per-user and per-request state (pysaml2 remembers every person it signs in
and every logout it starts), so nothing of one request reaches another and
the kept client does not grow.
"""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from saml2.client import Saml2Client


def fingerprint(*parts: object) -> bytes:
    """One digest of what a client is built from (``repr`` of the tuple tells ``("ab", "c")`` from ``("a", "bc")``)."""
    return hashlib.sha256(repr(parts).encode()).digest()


@dataclass
class _Kept:
    client: Saml2Client
    directory: str
    key_file: str
    users: int = 0
    evicted: bool = False


class KeptClients:
    """Clients by fingerprint; ``use`` lends one for a block, with our key on disk for that block only."""

    SIZE = 32

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[bytes, _Kept] = OrderedDict()
        self._pid = os.getpid()

    @contextmanager
    def use(
        self, key: bytes, key_pem: Callable[[], str], certificate: str, build: Callable[[str, str], Saml2Client]
    ) -> Iterator[Saml2Client]:
        """A client for ``key``; ``build(key_file, cert_file)`` makes one, with both files there, when none is kept.

        ``key_pem`` gives our decrypted private key, written to the key file for the block.
        """
        with self._lock:
            if self._pid != os.getpid():
                # A forked child: the parent's clients and directories are the parent's.
                self._kept, self._pid = OrderedDict(), os.getpid()
            kept = self._kept.get(key)
            if kept is None:
                kept = self._build(key, key_pem(), certificate, build)
            else:
                self._kept.move_to_end(key)
                if kept.users == 0:
                    _write_private(kept.key_file, key_pem())
            kept.users += 1
        try:
            yield _for_one_request(kept.client)
        finally:
            with self._lock:
                kept.users -= 1
                if kept.users == 0:
                    if kept.evicted:
                        shutil.rmtree(kept.directory, ignore_errors=True)
                    else:
                        os.remove(kept.key_file)

    def _build(self, key: bytes, key_pem: str, certificate: str, build: Callable[[str, str], Saml2Client]) -> _Kept:
        directory = tempfile.mkdtemp(prefix="authsvc-saml-")  # 0700
        key_file, cert_file = os.path.join(directory, "sp.key"), os.path.join(directory, "sp.crt")
        try:
            _write_private(key_file, key_pem)
            _write_private(cert_file, certificate)
            kept = _Kept(build(key_file, cert_file), directory, key_file)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        self._kept[key] = kept
        while len(self._kept) > self.SIZE:
            _, oldest = self._kept.popitem(last=False)
            oldest.evicted = True
            if oldest.users == 0:
                shutil.rmtree(oldest.directory, ignore_errors=True)
        return kept

    def clear(self) -> None:
        """Forget every client not in use now (their directories go; one in use goes when its block ends)."""
        with self._lock:
            for kept in self._kept.values():
                kept.evicted = True
                if kept.users == 0:
                    shutil.rmtree(kept.directory, ignore_errors=True)
            self._kept.clear()


def _write_private(path: str, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


def _for_one_request(client: Saml2Client) -> Saml2Client:
    """The kept client with the per-user and per-request state a new one starts with (``saml2.client_base.Base``)."""
    from saml2.population import Population

    lent = copy.copy(client)
    lent.users = Population(None)
    lent.state = {}
    lent.artifact = {}
    return lent
