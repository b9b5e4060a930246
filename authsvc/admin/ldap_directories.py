"""LDAP / Active Directory directories of a domain: create, change, delete, test the connection.

The bind password is write-only: stored encrypted, never shown, and an audit
record says only that it changed.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import delete

from authsvc.admin.actors import (
    Actor,
    audit_change,
    private_network_problems,
    require_change,
    save_change,
    save_new,
)
from authsvc.admin.schemas import read, target_domain
from authsvc.auth import ldap_client
from authsvc.core import security, validation
from authsvc.core.database import db
from authsvc.core.errors import ValidationFailed
from authsvc.core.models import LdapAccount, LdapDirectory
from authsvc.core.models.directory import DEFAULT_GROUP_ATTRIBUTE, DEFAULT_USER_FILTER
from authsvc.core.settings import settings


def _check_state(problems: dict[str, str], state: dict[str, Any]) -> None:
    """Rules over the whole directory as it would be saved, on create and update alike."""
    parts = urlsplit(state["url"])
    host = parts.hostname or ""
    if parts.scheme == "ldaps" and state.get("starttls"):
        problems["starttls"] = "ldaps:// is TLS already; StartTLS goes with ldap://"
    if parts.scheme == "ldap" and not state.get("starttls") and not validation.is_loopback(host):
        # A password sent in the clear over the network: only on the machine itself.
        problems["starttls"] = "ldap:// needs StartTLS (or use ldaps://), except on loopback"
    allowed = state.get("allow_private_network") or settings().sso_allow_private_networks
    if not allowed:
        problem = validation.public_url_problem(f"https://{parts.netloc}")
        if problem:
            problems.setdefault("url", problem + " (a system admin may allow a directory on private networks)")


def create_ldap_directory(actor: Actor, data: Any) -> LdapDirectory:
    from authsvc.admin.schemas.ldap import LdapDirectoryCreate

    domain = target_domain(actor, data)
    values = read(LdapDirectoryCreate, data).given()
    values.pop("domain", None)
    password = values.pop("bind_password")
    problems = private_network_problems(values, actor, "a directory")
    _check_state(problems, values)
    if problems:
        raise ValidationFailed(problems)
    values.setdefault("user_filter", DEFAULT_USER_FILTER)
    values.setdefault("group_attribute", DEFAULT_GROUP_ATTRIBUTE)
    directory = LdapDirectory(
        id=secrets.token_hex(8),
        domain_id=domain.id,
        bind_password_encrypted=security.encrypt(password),
        **values,
    )
    save_new(actor, directory, "ldap", domain.id, "that LDAP directory")
    return directory


def update_ldap_directory(actor: Actor, directory: LdapDirectory, data: Any) -> LdapDirectory:
    from authsvc.admin.schemas.ldap import LdapDirectoryChange

    require_change(actor, directory.domain_id)
    before = directory.as_json()
    values = read(LdapDirectoryChange, data).given()  # an explicit null clears ca_pem or disabled_attribute
    password = values.pop("bind_password", None)
    problems = private_network_problems(values, actor, "a directory")
    if not actor.system_admin and "url" in values and values["url"] != directory.url:
        # Where an on-premises directory may be reached was a system admin's decision for the URL they saw.
        values["allow_private_network"] = False
    state = {name: getattr(directory, name) for name in ("url", "starttls", "allow_private_network")}
    _check_state(problems, {**state, **values})
    if problems:
        raise ValidationFailed(problems)
    if password:
        values["bind_password_encrypted"] = security.encrypt(password)
    save_change(actor, directory, "ldap", before, values, {"bind_password_changed": True} if password else None)
    return directory


def delete_ldap_directory(actor: Actor, directory: LdapDirectory) -> None:
    """Delete the directory and its links; the users it provisioned stay (without a password, they cannot sign in)."""
    require_change(actor, directory.domain_id)
    before = directory.as_json()
    db.session.execute(delete(LdapAccount).where(LdapAccount.directory_id == directory.id))
    db.session.delete(directory)
    audit_change(actor, "ldap.deleted", directory.domain_id, f"ldap:{directory.id}", before=before)
    db.session.commit()


class DirectoryTest(ldap_client.ConnectionTest):
    """A directory's test as the admin API answers it (authsvc.admin.schemas.ldap.LdapDirectoryTest)."""

    id: str


def check_ldap_directory(actor: Actor, directory: LdapDirectory) -> DirectoryTest:
    """The service bind and a search of the base DN, now: ``{"ok": true}`` or ``{"ok": false, "error"}``."""
    require_change(actor, directory.domain_id)
    return DirectoryTest(id=directory.id, **ldap_client.test_connection(directory))
