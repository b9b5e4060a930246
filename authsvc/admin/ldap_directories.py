"""LDAP / Active Directory directories of a domain: create, change, delete, test the connection.

The bind password is write-only: stored encrypted, never shown, and an audit
record says only that it changed.
"""

from __future__ import annotations

import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509
from flask import current_app
from ldap3.core.exceptions import LDAPException
from ldap3.utils.dn import parse_dn
from sqlalchemy import delete

from authsvc.accounts import ldap_client
from authsvc.admin.actors import Actor, audit_change, commit, require_change
from authsvc.admin.fields import Fields, domain_field
from authsvc.core import security, validation
from authsvc.core.database import db
from authsvc.core.models import LdapAccount, LdapDirectory
from authsvc.core.models.directory import DEFAULT_GROUP_ATTRIBUTE, DEFAULT_USER_FILTER

# An attribute description (RFC 4512): a name or an OID.
ATTRIBUTE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9-]{0,99}|\d+(?:\.\d+)+)$")


def directory_url(url: str) -> str:
    """``ldap://host[:port]`` or ``ldaps://host[:port]``, nothing more."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise validation.Invalid("is not a valid URL") from None
    if parts.scheme not in ("ldap", "ldaps") or not parts.hostname:
        raise validation.Invalid("must be ldap://host:port or ldaps://host:port")
    if parts.username or parts.password or parts.path.strip("/") or parts.query or parts.fragment:
        raise validation.Invalid("must be ldap://host:port or ldaps://host:port, without a path, query or user")
    return f"{parts.scheme}://{parts.netloc}"


def distinguished_name(value: str) -> str:
    try:
        parse_dn(value)
    except (LDAPException, ValueError, IndexError):
        raise validation.Invalid("is not a distinguished name, e.g. cn=authsvc,dc=example,dc=org") from None
    return value


def search_filter(value: str) -> str:
    if "{email}" not in value or not (value.startswith("(") and value.endswith(")")):
        raise validation.Invalid("must be a filter in parentheses with an {email} placeholder, e.g. (mail={email})")
    return value


def attribute(value: str) -> str:
    if not ATTRIBUTE.match(value):
        raise validation.Invalid("must be an attribute name, e.g. memberOf")
    return value


def ca_certificates(value: str) -> str:
    try:
        x509.load_pem_x509_certificates(value.encode())
    except ValueError:
        raise validation.Invalid("must be one or more PEM certificates (-----BEGIN CERTIFICATE-----)") from None
    return value


def _fields(fields: Fields, actor: Actor) -> dict[str, Any]:
    values: dict[str, Any] = {
        "name": fields.string("name", required=True),
        "url": fields.string("url", required=True, max_length=500, rule=directory_url),
        "starttls": fields.boolean("starttls"),
        "bind_dn": fields.string("bind_dn", required=True, max_length=500, rule=distinguished_name),
        "base_dn": fields.string("base_dn", required=True, max_length=500, rule=distinguished_name),
        "user_filter": fields.string("user_filter", max_length=1000, rule=search_filter),
        "group_attribute": fields.string("group_attribute", max_length=100, rule=attribute),
        "disabled_attribute": fields.string("disabled_attribute", max_length=100, rule=attribute),
        "ca_pem": fields.string("ca_pem", max_length=50_000, rule=ca_certificates),
        "allow_private_network": fields.boolean("allow_private_network"),
        "enabled": fields.boolean("enabled"),
    }
    if values["allow_private_network"] and not actor.system_admin:
        # The service connects from inside our network to where the URL points.
        fields.errors["allow_private_network"] = "only a system admin may allow a directory on private networks"
    return {k: v for k, v in values.items() if v is not None}


def _check_state(fields: Fields, state: dict[str, Any]) -> None:
    """Rules over the whole directory as it would be saved, on create and update alike."""
    url = state.get("url")
    if not url or "url" in fields.errors:
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme == "ldaps" and state.get("starttls"):
        fields.errors["starttls"] = "ldaps:// is TLS already; StartTLS goes with ldap://"
    if parts.scheme == "ldap" and not state.get("starttls") and not validation.is_loopback(host):
        # A password sent in the clear over the network: only on the machine itself.
        fields.errors["starttls"] = "ldap:// needs StartTLS (or use ldaps://), except on loopback"
    allowed = state.get("allow_private_network") or current_app.config["AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS"]
    if not allowed:
        problem = validation.public_url_problem(f"https://{parts.netloc}")
        if problem:
            fields.errors.setdefault("url", problem + " (a system admin may allow a directory on private networks)")


def create_ldap_directory(actor: Actor, data: Any) -> LdapDirectory:
    fields = Fields(data, partial=False)
    domain = domain_field(actor, fields)
    password = fields.string("bind_password", required=True, max_length=1000)
    values = _fields(fields, actor)
    _check_state(fields, values)
    fields.done()
    values.setdefault("user_filter", DEFAULT_USER_FILTER)
    values.setdefault("group_attribute", DEFAULT_GROUP_ATTRIBUTE)
    directory = LdapDirectory(
        id=secrets.token_hex(8),
        domain_id=domain.id,
        bind_password_encrypted=security.encrypt(password),
        **values,
    )
    db.session.add(directory)
    db.session.flush()
    audit_change(actor, "ldap.created", domain.id, f"ldap:{directory.id}", after=directory.as_json())
    commit("that LDAP directory")
    return directory


def update_ldap_directory(actor: Actor, directory: LdapDirectory, data: Any) -> LdapDirectory:
    require_change(actor, directory.domain_id)
    before = directory.as_json()
    fields = Fields(data, partial=True)
    password = fields.string("bind_password", required=True, max_length=1000)
    values = _fields(fields, actor)
    if not actor.system_admin and "url" in values and values["url"] != directory.url:
        # Where an on-premises directory may be reached was a system admin's decision for the URL they saw.
        values["allow_private_network"] = False
    for name in ("ca_pem", "disabled_attribute"):
        if fields.has(name) and fields.data[name] is None:
            values[name] = None  # an explicit null clears an optional setting
    state = {name: getattr(directory, name) for name in ("url", "starttls", "allow_private_network")}
    _check_state(fields, {**state, **values})
    fields.done()
    for name, value in values.items():
        setattr(directory, name, value)
    if password:
        directory.bind_password_encrypted = security.encrypt(password)
    after = directory.as_json() | ({"bind_password_changed": True} if password else {})
    audit_change(actor, "ldap.updated", directory.domain_id, f"ldap:{directory.id}", before, after)
    db.session.commit()
    return directory


def delete_ldap_directory(actor: Actor, directory: LdapDirectory) -> None:
    """Delete the directory and its links; the users it provisioned stay (without a password, they cannot sign in)."""
    require_change(actor, directory.domain_id)
    before = directory.as_json()
    db.session.execute(delete(LdapAccount).where(LdapAccount.directory_id == directory.id))
    db.session.delete(directory)
    audit_change(actor, "ldap.deleted", directory.domain_id, f"ldap:{directory.id}", before=before)
    db.session.commit()


def check_ldap_directory(actor: Actor, directory: LdapDirectory) -> dict[str, Any]:
    """The service bind and a search of the base DN, now: ``{"ok": true}`` or ``{"ok": false, "error"}``."""
    require_change(actor, directory.domain_id)
    return {"id": directory.id, **ldap_client.test_connection(directory)}
