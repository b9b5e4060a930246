"""Domains: creating one (a system admin), changing one, adding and removing its scopes, its MFA policy."""

from __future__ import annotations

from pydantic import Field

from authsvc.admin.schemas.answers import DECIMAL_ID, Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.choices import POLICIES, MfaRequirement, SecurityProfile
from authsvc.admin.schemas.types import Choice, Lifetime, Name, Text
from authsvc.core import validation
from authsvc.core.models import PROFILES

Host = Text(253, min_length=1, rule=validation.host, description="A host name or IP address.")
Scopes = Text(
    2000, rule=validation.scopes, description="Space-separated scopes; default `public mqtt.read mqtt.write`."
)
PROFILE_DESCRIPTION = (
    "The security profile of every application of the domain: `standard`, or `fapi2`, the FAPI 2.0 Security "
    "Profile (docs/fapi.md: confidential private_key_jwt clients, PKCE S256, pushed and DPoP-bound requests, "
    "60-second codes, no password or device grant, credentials in headers only)."
)
Profile = Choice(*PROFILES, description=PROFILE_DESCRIPTION)
NEW_DEVICE_NOTICE = (
    "Whether a sign-in from a browser not seen before for the user mails them a notice (docs/account.md); default true."
)
SessionTtl = Field(default=None, description="Seconds a sign-in session lasts; null or 0 for AUTHSVC_SESSION_TTL.")


class DomainCreate(Schema):
    """A new domain (tenant), found by the requests' Host."""

    name: Name()
    host: Host
    scopes: Scopes | None = None
    session_ttl: Lifetime | None = SessionTtl
    profile: Profile = None


class DomainChange(Schema):
    """Only the fields given change. Only a system admin may change `host`; `scopes` must keep every scope the
    domain's applications and live API keys use; `profile` `fapi2` needs every application to comply, and revokes
    the tokens the profile would not have issued (docs/fapi.md#switching-a-domain)."""

    name: Name() = None
    host: Host = None
    scopes: Text(2000, min_length=1, rule=validation.scopes, description="Space-separated scopes.") = None
    session_ttl: Lifetime | None = SessionTtl
    profile: Profile = None
    new_device_notice: bool | None = Field(default=None, description=NEW_DEVICE_NOTICE)


class DomainScopes(Schema):
    """Scopes to add to the domain's, or to remove from them."""

    scopes: Text(2000, min_length=1, rule=validation.scopes, description="Space-separated scopes.")


class MfaPolicy(Schema):
    """Who of the domain must sign in with a second factor."""

    require: Choice(*POLICIES)


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
    new_device_notice: bool = Field(description=NEW_DEVICE_NOTICE)


class DomainList(Page):
    items: list[Domain]


class MfaPolicySet(Answer):
    domain: str = Field(description="The domain's id.")
    require: MfaRequirement
