"""Talking to an LDAP directory (ldap3): connect, service bind, find one user, bind as them.

Every wait is bounded by ``AUTHSVC_LDAP_TIMEOUT`` (resolving the host,
connecting and each operation), which the settings keep below the worker
timeout, and a sign-in by ``AUTHSVC_OUTBOUND_DEADLINE`` in all: run under
``directory_deadline``, the waits are cut to what is left of it, and the
connections' sockets are shut down when it passes (authsvc.core.deadline), so a
directory that answers a byte at a time cannot hold a worker. A directory that
cannot be reached, refuses the service bind or does not answer in time raises
``DirectoryUnavailable`` (a 503), never a wrong-password answer.
Certificates are verified (the directory's CA PEM, else the system's), and
the host is resolved here and checked as SSO providers' URLs are: a directory
on loopback or private addresses needs ``allow_private_network``.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import socket
import ssl
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict
from urllib.parse import urlsplit

from authsvc.core import deadline, security
from authsvc.core.errors import DirectoryUnavailable
from authsvc.core.models import LdapDirectory
from authsvc.core.settings import settings

if TYPE_CHECKING:
    from ldap3 import Connection, Server

# ldap3 is imported where it is first used, not with the app: a worker of a
# deployment without directories never carries it (docs/performance.md).

log = logging.getLogger(__name__)

# Active Directory's userAccountControl ACCOUNTDISABLE bit.
AD_ACCOUNT_DISABLED = 0x2
# Stable ids of an entry, whichever the directory has: OpenLDAP's, then AD's.
ID_ATTRIBUTES = ("entryUUID", "objectGUID")


@dataclass
class Entry:
    """A user's entry: its DN, stable id, e-mail, name, groups, and whether it is disabled."""

    dn: str
    subject: str
    email: str | None
    name: str
    groups: list[str] = field(default_factory=list)
    disabled: bool = False


def directory_deadline() -> AbstractContextManager[deadline.Deadline]:
    """The deadline a sign-in (or a check) spends on directories in all: ``AUTHSVC_OUTBOUND_DEADLINE``."""
    return deadline.within(settings().outbound_deadline)


def _timeout(directory: LdapDirectory) -> float:
    """``AUTHSVC_LDAP_TIMEOUT``, or what is left of the deadline when less; DirectoryUnavailable when nothing is."""
    timeout = settings().ldap_timeout
    limit = deadline.current()
    if limit is None:
        return timeout
    try:
        return min(timeout, limit.remaining())
    except deadline.DeadlineExceeded as exc:
        raise DirectoryUnavailable(directory, str(exc)) from None


def user_filter(directory: LdapDirectory, email: str) -> str:
    """The directory's filter for ``email``, the value escaped (RFC 4515): ``*)(uid=*`` stays a literal."""
    from ldap3.utils.conv import escape_filter_chars

    return directory.user_filter.replace("{email}", escape_filter_chars(email))


_MAX_RESOLVERS = 8
_RESOLVERS = threading.BoundedSemaphore(_MAX_RESOLVERS)


def _resolve(host: str, port: int, timeout: float) -> list:
    """``getaddrinfo`` within ``timeout`` seconds.

    The system resolver has its own timeouts and retries (resolv.conf: 5 s,
    twice, per server), longer than a sign-in may wait: it runs on a daemon
    thread, and a name that does not resolve in time is given up (the thread
    ends when the resolver does).
    """
    if _is_address(host):
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    # While the resolver hangs, each sign-in leaves a thread waiting on it: a bounded number.
    if not _RESOLVERS.acquire(blocking=False):
        raise TimeoutError(f"{_MAX_RESOLVERS} lookups are already waiting on the resolver")
    answer: dict[str, Any] = {}

    def resolve() -> None:
        try:
            answer["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except Exception as exc:  # noqa: BLE001 - handed to the caller (UnicodeError: a label over 63 characters)
            answer["error"] = exc
        finally:
            _RESOLVERS.release()

    resolver = threading.Thread(target=resolve, name="authsvc-ldap-resolve", daemon=True)
    resolver.start()
    resolver.join(timeout)
    if resolver.is_alive():
        raise TimeoutError(f"no answer from the resolver in {timeout:g} s")
    if "error" in answer:
        raise answer["error"]
    return answer["infos"]


def _checked_address(directory: LdapDirectory, host: str, port: int) -> str:
    """The address to connect to: ``host`` resolved once, refused on private networks unless allowed."""
    try:
        infos = _resolve(host, port, _timeout(directory))
    except (OSError, UnicodeError) as exc:
        raise DirectoryUnavailable(directory, f"cannot resolve {host}: {exc}") from None
    allowed = directory.allow_private_network or settings().sso_allow_private_networks
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if allowed or (address.is_global and not address.is_multicast):
            return str(address)
    raise DirectoryUnavailable(directory, f"{host} resolves to a private address and the directory is not allowed one")


def _server(directory: LdapDirectory) -> Server:
    from ldap3 import NONE, Server, Tls

    parts = urlsplit(directory.url)
    secure = parts.scheme == "ldaps"
    host = parts.hostname or ""
    port = parts.port or (636 if secure else 389)
    address = _checked_address(directory, host, port)
    tls = Tls(
        validate=ssl.CERT_REQUIRED,
        version=ssl.PROTOCOL_TLS_CLIENT,
        ca_certs_data=directory.ca_pem or None,
        # The connection goes to the checked address; the certificate must name the host of the URL.
        valid_names=[host],
        sni=None if _is_address(host) else host,
    )
    timeout = _timeout(directory)
    # get_info=NONE: reading the root DSE on connect would race StartTLS, which slapd refuses.
    return Server(address, port=port, use_ssl=secure, tls=tls, get_info=NONE, connect_timeout=timeout)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _open(directory: LdapDirectory, user: str, password: str | bytes) -> Connection:
    """An open connection (TLS started when asked), not yet bound."""
    from ldap3 import SIMPLE, Connection
    from ldap3.core.exceptions import LDAPException

    connection = Connection(
        _server(directory),
        user=user,
        password=password,
        authentication=SIMPLE,
        read_only=True,
        raise_exceptions=False,
        # ldap3 sets it as SO_RCVTIMEO, whole seconds only; the deadline's watchdog cuts the rest.
        receive_timeout=math.ceil(_timeout(directory)),
    )
    try:
        connection.open()
        deadline.watch(connection.socket)
        if directory.starttls and not connection.start_tls():
            raise DirectoryUnavailable(directory, f"StartTLS refused: {connection.result}")
    except LDAPException as exc:
        close(connection)
        raise DirectoryUnavailable(directory, f"{type(exc).__name__}: {exc}") from None
    return connection


def close(connection: Connection) -> None:
    """Unbind and close; a connection that already broke has nothing left to close."""
    from ldap3.core.exceptions import LDAPException

    try:
        connection.unbind()
    except LDAPException:
        pass


def service_connection(directory: LdapDirectory) -> Connection:
    """A connection bound as the directory's service account."""
    from ldap3.core.exceptions import LDAPException

    connection = _open(directory, directory.bind_dn, security.decrypt(directory.bind_password_encrypted))
    try:
        bound = connection.bind()
    except LDAPException as exc:
        close(connection)
        raise DirectoryUnavailable(directory, f"{type(exc).__name__}: {exc}") from None
    if not bound:
        # Our own credentials failed: the directory's configuration, never the user's password.
        result = connection.result.get("description")
        close(connection)
        raise DirectoryUnavailable(directory, f"service bind refused: {result}")
    return connection


def _attributes(directory: LdapDirectory) -> list[str]:
    names = ["mail", "cn", "displayName", "userAccountControl", directory.group_attribute, *ID_ATTRIBUTES]
    if directory.disabled_attribute:
        names.append(directory.disabled_attribute)
    return list(dict.fromkeys(names))


def _search(directory: LdapDirectory, connection: Connection, base: str, scope: str, search_filter: str) -> list:
    from ldap3.core.exceptions import LDAPException

    try:
        connection.search(base, search_filter, search_scope=scope, attributes=_attributes(directory), size_limit=2)
    except LDAPException as exc:
        raise DirectoryUnavailable(directory, f"{type(exc).__name__}: {exc}") from None
    # 0 success, 4 sizeLimitExceeded (more than one entry: refused below), 32 noSuchObject (gone).
    if connection.result.get("result") not in (0, 4, 32):
        raise DirectoryUnavailable(directory, f"search failed: {connection.result.get('description')}")
    return [e for e in connection.response or [] if e.get("type") == "searchResEntry"]


def find_user(directory: LdapDirectory, connection: Connection, email: str) -> Entry | None:
    """The one entry the user filter finds for ``email``; None for none or several."""
    from ldap3 import SUBTREE

    found = _search(directory, connection, directory.base_dn, SUBTREE, user_filter(directory, email))
    return _entry(directory, found[0]) if len(found) == 1 else None


def _entry(directory: LdapDirectory, raw: dict) -> Entry:
    attributes = raw.get("attributes") or {}

    def first(name: str) -> str | None:
        value = attributes.get(name)
        if isinstance(value, list):
            value = value[0] if value else None
        return str(value) if value not in (None, "") else None

    control = first("userAccountControl")
    disabled = bool(control and control.lstrip("-").isdigit() and int(control) & AD_ACCOUNT_DISABLED)
    if directory.disabled_attribute and attributes.get(directory.disabled_attribute):
        disabled = True
    groups = attributes.get(directory.group_attribute) or []
    return Entry(
        dn=raw["dn"],
        subject=_subject(raw),
        email=(first("mail") or "").lower() or None,
        name=first("displayName") or first("cn") or "",
        groups=list(dict.fromkeys(group_name(g) for g in (groups if isinstance(groups, list) else [groups]))),
        disabled=disabled,
    )


def _subject(raw: dict) -> str:
    """The entry's stable id: entryUUID as text, AD's binary objectGUID in hex; else the DN."""
    values = raw.get("raw_attributes") or {}
    for name in ID_ATTRIBUTES:
        value = values.get(name)
        if value:
            return value[0].decode("ascii", "replace") if name == "entryUUID" else f"guid:{value[0].hex()}"
    return raw["dn"]


def group_name(value: str) -> str:
    """A group DN's first RDN value (``cn=staff,ou=groups,...`` is ``staff``); any other value as it is."""
    from ldap3.core.exceptions import LDAPException
    from ldap3.utils.dn import parse_dn

    try:
        return str(parse_dn(str(value))[0][1])
    except (LDAPException, IndexError, ValueError):
        return str(value)


def password_matches(directory: LdapDirectory, dn: str, password: str) -> bool:
    """Whether the directory accepts a bind as ``dn`` with ``password``: the directory decides, we never compare.

    An empty password is refused here, before any bind: LDAP takes a simple
    bind with an empty password as an unauthenticated bind, which succeeds.
    """
    from ldap3.core.exceptions import LDAPException
    from ldap3.protocol.sasl.sasl import validate_simple_password

    if not password:
        return False
    try:
        # SASLprep (RFC 4013) and UTF-8, as ldap3's bind does: a password refused here never leaves
        # this process, so it is a wrong password, not an outage (a 503 only for addresses in the
        # directory would tell who is in it).
        prepared = validate_simple_password(password)
    except (LDAPException, UnicodeError):
        return False
    if not prepared:
        return False
    connection = _open(directory, dn, prepared)
    try:
        bound = connection.bind()
        result = dict(connection.result or {})
    except LDAPException as exc:
        raise DirectoryUnavailable(directory, f"{type(exc).__name__}: {exc}") from None
    finally:
        close(connection)
    if bound:
        return True
    # 49 invalidCredentials (AD adds a reason in the message); anything else is the directory's trouble.
    if result.get("result") == 49:
        return False
    raise DirectoryUnavailable(directory, f"bind failed: {result.get('description')}")


class ConnectionTest(TypedDict):
    """What ``test_connection`` found: ``ok``, or what failed (``error``)."""

    ok: bool
    error: NotRequired[str]


def test_connection(directory: LdapDirectory) -> ConnectionTest:
    """The service bind and a base search of ``base_dn``: ``{"ok": true}`` or ``{"ok": false, "error"}``.

    The error says what failed (no secrets: the bind password is never in it).
    """
    from ldap3 import BASE
    from ldap3.core.exceptions import LDAPException

    with directory_deadline():
        try:
            connection = service_connection(directory)
        except DirectoryUnavailable as exc:
            return {"ok": False, "error": exc.why}
        try:
            connection.search(directory.base_dn, "(objectClass=*)", search_scope=BASE, attributes=[])
            if connection.result.get("result") != 0:
                return {"ok": False, "error": f"base DN search failed: {connection.result.get('description')}"}
        except LDAPException as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            close(connection)
    return {"ok": True}
