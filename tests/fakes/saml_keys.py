"""The fake SAML IdP's key pairs (tests/fakes/saml_idp.py): self-signed RSA certificates, made once per test
process and lent to one running IdP at a time."""

from __future__ import annotations

import datetime
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID


def _new_key_pair() -> tuple[bytes, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-idp")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    return (
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        cert.public_bytes(serialization.Encoding.PEM),
    )


class _KeyPairs:
    """The IdPs' key pairs, made once per test process: an RSA key takes 0.1-0.5 s to generate, and every IdP needs
    two (its own and a rogue one), a rotation one more. A pair is lent to one running IdP at a time and never twice
    to the same IdP, so that keys differ wherever a test tells them apart (a rotation, another IdP, ``other_key``);
    an IdP gives its pairs back when it stops."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pairs: list[tuple[bytes, bytes]] = []
        self._lent: set[int] = set()

    def take(self) -> tuple[int, tuple[bytes, bytes]]:
        with self._lock:
            index = next(i for i in range(len(self._pairs) + 1) if i not in self._lent)
            if index == len(self._pairs):
                self._pairs.append(_new_key_pair())
            self._lent.add(index)
            return index, self._pairs[index]

    def give_back(self, indexes: list[int]) -> None:
        with self._lock:
            self._lent.difference_update(indexes)


key_pairs = _KeyPairs()
