"""Domains: creating one (a system admin), changing one, adding and removing its scopes, its MFA policy."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from authsvc.admin.schemas.answers import DECIMAL_ID, Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.choices import ClientMetadataMode, MfaRequirement, SecurityProfile, SignupMode
from authsvc.admin.schemas.types import TRIMMED, Each, Lifetime, Name, Omissible, StringList, Text
from authsvc.core import validation

Host = Annotated[str, Text(253, min_length=1, rule=validation.host), Field(description="A host name or IP address.")]
Scopes = Annotated[
    str,
    Text(2000, rule=validation.scopes),
    Field(description="Space-separated scopes; default `public mqtt.read mqtt.write`."),
]
# A change's scopes: not empty.
SomeScopes = Annotated[
    str, Text(2000, min_length=1, rule=validation.scopes), Field(description="Space-separated scopes.")
]
PROFILE_DESCRIPTION = (
    "The security profile of every application of the domain: `standard`, or `fapi2`, the FAPI 2.0 Security "
    "Profile (docs/fapi.md: confidential private_key_jwt clients, PKCE S256, pushed and DPoP-bound requests, "
    "60-second codes, no password or device grant, credentials in headers only)."
)
Profile = Annotated[SecurityProfile, TRIMMED, Field(description=PROFILE_DESCRIPTION)]
SIGNUP_DESCRIPTION = (
    "Who may create an account at /auth/signup: `off` (default; accounts by invitation or by an admin), `open` "
    "(anyone) or `restricted` (addresses at `signup_email_domains`). docs/account.md#sign-up."
)
Signup = Annotated[SignupMode, TRIMMED, Field(description=SIGNUP_DESCRIPTION)]
EMAIL_DOMAINS_DESCRIPTION = "The e-mail domains whose addresses may sign up under `restricted`."
SignupEmailDomains = Annotated[StringList, Each(validation.email_domain), Field(description=EMAIL_DOMAINS_DESCRIPTION)]
NEW_DEVICE_NOTICE = (
    "Whether a sign-in from a browser not seen before for the user mails them a notice (docs/account.md); default true."
)
CLIENT_METADATA_DESCRIPTION = (
    "Which Client ID Metadata Documents serve as client_id (docs/mcp.md): `off`, `allowlist` (those of "
    "`client_metadata_hosts`) or `any` (the default); such a client always gets the consent page."
)
ClientMetadata = Annotated[ClientMetadataMode, TRIMMED, Field(description=CLIENT_METADATA_DESCRIPTION)]
CLIENT_METADATA_HOSTS = "The hosts whose client metadata documents the domain reads under `allowlist`."
ClientMetadataHosts = Annotated[StringList, Each(validation.host), Field(description=CLIENT_METADATA_HOSTS)]
CLIENT_METADATA_PRIVATE = (
    "Whether client metadata documents may be fetched from loopback and private addresses (plain http on loopback "
    "only); only a system admin may set it true."
)
OPEN_REGISTRATION = (
    "Whether clients may register themselves at /auth/oauth/register without an initial access token (RFC 7591, "
    "as MCP clients do; docs/mcp.md); default false. Such clients always get the consent page."
)
SessionTtl = Field(default=None, description="Seconds a sign-in session lasts; null or 0 for AUTHSVC_SESSION_TTL.")


class DomainCreate(Schema):
    """A new domain (tenant), found by the requests' Host."""

    name: Name
    host: Host
    scopes: Scopes | None = None
    session_ttl: Lifetime | None = SessionTtl
    profile: Omissible[Profile] = None


class DomainChange(Schema):
    """Only the fields given change. Only a system admin may change `host`; `scopes` must keep every scope the
    domain's applications and live API keys use; `profile` `fapi2` needs every application to comply, and revokes
    the tokens the profile would not have issued (docs/fapi.md#switching-a-domain)."""

    name: Omissible[Name] = None
    host: Omissible[Host] = None
    scopes: Omissible[SomeScopes] = None
    session_ttl: Lifetime | None = SessionTtl
    profile: Omissible[Profile] = None
    signup: Omissible[Signup] = None
    signup_email_domains: Omissible[SignupEmailDomains] = None
    new_device_notice: bool | None = Field(default=None, description=NEW_DEVICE_NOTICE)
    client_metadata_documents: Omissible[ClientMetadata] = None
    client_metadata_hosts: Omissible[ClientMetadataHosts] = None
    client_metadata_allow_private_network: bool | None = Field(default=None, description=CLIENT_METADATA_PRIVATE)
    open_registration: bool | None = Field(default=None, description=OPEN_REGISTRATION)


class DomainScopes(Schema):
    """Scopes to add to the domain's, or to remove from them."""

    scopes: SomeScopes


class MfaPolicy(Schema):
    """Who of the domain must sign in with a second factor."""

    require: Annotated[MfaRequirement, TRIMMED]


# Answers


class Domain(Answer):
    id: str = Field(description=DECIMAL_ID)
    name: str
    host: str = Field(description="The Host that selects this domain, lower-cased.")
    scopes: str = Field(description="Space-separated scopes the domain knows.")
    session_ttl: int | None = Field(description="Seconds a sign-in session lasts; null for AUTHSVC_SESSION_TTL.")
    mfa_require: MfaRequirement = Field(
        description="Who must sign in with a second factor (service accounts are exempt)."
    )
    profile: SecurityProfile = Field(description=PROFILE_DESCRIPTION)
    scim_last_activity: int | None = Field(
        description="When a SCIM client last called /scim/v2 for this domain (seconds; to the minute); null if never."
    )
    signup: SignupMode = Field(description=SIGNUP_DESCRIPTION)
    signup_email_domains: list[str] = Field(
        description="The e-mail domains whose addresses may sign up under `restricted`."
    )
    new_device_notice: bool = Field(description=NEW_DEVICE_NOTICE)
    client_metadata_documents: ClientMetadataMode = Field(description=CLIENT_METADATA_DESCRIPTION)
    client_metadata_hosts: list[str] = Field(description=CLIENT_METADATA_HOSTS)
    client_metadata_allow_private_network: bool = Field(description=CLIENT_METADATA_PRIVATE)
    open_registration: bool = Field(description=OPEN_REGISTRATION)


class DomainList(Page):
    items: list[Domain]


class MfaPolicySet(Answer):
    domain: str = Field(description="The domain's id.")
    require: MfaRequirement
