"""LDAP / Active Directory directories of a domain: creating one, changing one, and how one is shown."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlsplit

from cryptography import x509
from ldap3.core.exceptions import LDAPException
from ldap3.utils.dn import parse_dn
from pydantic import Field

from authsvc.admin.schemas.answers import Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import SECRET, DomainId, Name, Omissible, Text
from authsvc.core import validation

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
    validation.host(parts.hostname)  # a name the resolver can take: labels of at most 63 characters
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


# What each setting is, said once for the bodies and the answers.
URL = (
    "`ldap://HOST:PORT` (with `starttls`) or `ldaps://HOST:PORT`; nothing else. Plain ldap:// without StartTLS only "
    "on loopback; loopback and private addresses only with `allow_private_network`."
)
STARTTLS = "Upgrade an ldap:// connection with StartTLS."
BIND_DN = "The service account that searches for users."
BASE_DN = "Where users are searched for (subtree)."
USER_FILTER = (
    "An LDAP filter with an `{email}` placeholder, replaced by the escaped address (RFC 4515). "
    "Default `(mail={email})`."
)
GROUP_ATTRIBUTE = (
    "The attribute listing the user's groups; a DN's first value (`cn=staff,...` is `staff`) becomes a group. "
    "Default `memberOf`."
)
DISABLED_ATTRIBUTE = (
    "An attribute whose presence marks an entry disabled (AD's userAccountControl ACCOUNTDISABLE bit is always read)."
)
CA_PEM = (
    "PEM of the CA(s) that sign the directory's certificate; else the system's CAs. Certificates are always verified."
)
ALLOW_PRIVATE_NETWORK = "The directory may be on loopback or private addresses. Only a system admin may set it."
ENABLED = "Switched off, the directory signs nobody in, and its users' sessions end at their next check."

Url = Annotated[str, Text(500, min_length=1, rule=directory_url), Field(description=URL)]
StartTls = Annotated[bool, Field(description=STARTTLS)]
BindDn = Annotated[str, Text(500, min_length=1, rule=distinguished_name), Field(description=BIND_DN)]
BindPassword = Annotated[
    str, Text(1000, min_length=1), SECRET, Field(description="Its password; stored encrypted, never shown.")
]
BaseDn = Annotated[str, Text(500, min_length=1, rule=distinguished_name), Field(description=BASE_DN)]
UserFilter = Annotated[str, Text(1000, rule=search_filter), Field(description=USER_FILTER)]
GroupAttribute = Annotated[str, Text(100, rule=attribute), Field(description=GROUP_ATTRIBUTE)]
# Optional settings a change may clear with null: their descriptions go on the field, beside the null.
DisabledAttribute = Annotated[str, Text(100, rule=attribute)]
CaPem = Annotated[str, Text(50_000, rule=ca_certificates)]
AllowPrivateNetwork = Annotated[bool, Field(description=ALLOW_PRIVATE_NETWORK)]
Enabled = Annotated[bool, Field(description=ENABLED)]


class LdapDirectoryCreate(Schema):
    """A directory the domain's users sign in with: the service binds as `bind_dn` and searches `base_dn` for them."""

    domain: Omissible[DomainId] = None
    name: Name
    url: Url
    starttls: Omissible[StartTls] = None
    bind_dn: BindDn
    bind_password: BindPassword
    base_dn: BaseDn
    user_filter: Omissible[UserFilter] = None
    group_attribute: Omissible[GroupAttribute] = None
    disabled_attribute: Omissible[DisabledAttribute] = Field(default=None, description=DISABLED_ATTRIBUTE)
    ca_pem: Omissible[CaPem] = Field(default=None, description=CA_PEM)
    allow_private_network: Omissible[AllowPrivateNetwork] = None
    enabled: Omissible[Enabled] = None


class LdapDirectoryChange(Schema):
    """Only the fields given change."""

    name: Omissible[Name] = None
    url: Omissible[Url] = None
    starttls: Omissible[StartTls] = None
    bind_dn: Omissible[BindDn] = None
    bind_password: Omissible[BindPassword] = None
    base_dn: Omissible[BaseDn] = None
    user_filter: Omissible[UserFilter] = None
    group_attribute: Omissible[GroupAttribute] = None
    # An explicit null clears these optional settings.
    disabled_attribute: DisabledAttribute | None = Field(default=None, description=DISABLED_ATTRIBUTE)
    ca_pem: CaPem | None = Field(default=None, description=CA_PEM)
    allow_private_network: Omissible[AllowPrivateNetwork] = None
    enabled: Omissible[Enabled] = None


# Answers


class LdapDirectory(Answer):
    """The bind password is never shown."""

    id: str = Field(description="The directory's id.")
    domain: str = Field(description="The domain's id.")
    name: str
    url: str = Field(description=URL)
    starttls: bool = Field(description=STARTTLS)
    bind_dn: str = Field(description=BIND_DN)
    base_dn: str = Field(description=BASE_DN)
    user_filter: str = Field(description=USER_FILTER)
    group_attribute: str = Field(description=GROUP_ATTRIBUTE)
    disabled_attribute: str | None = Field(description=DISABLED_ATTRIBUTE)
    ca_pem: str | None = Field(description=CA_PEM)
    allow_private_network: bool = Field(description=ALLOW_PRIVATE_NETWORK)
    enabled: bool = Field(description=ENABLED)


class LdapDirectoryList(Page):
    items: list[LdapDirectory]


class LdapDirectoryTest(Answer):
    id: str
    ok: bool
    error: Omissible[str] = Field(default=None, description="What failed (no secrets).")
