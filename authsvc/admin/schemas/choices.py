"""The admin inputs' fixed choices and bounds, without pydantic: the command line and the console offer them too."""

from __future__ import annotations

from typing import Literal, get_args

MfaRequirement = Literal["off", "admins", "all"]
POLICIES: tuple[str, ...] = get_args(MfaRequirement)

# A domain's security profile (authsvc.core.models.PROFILES; docs/fapi.md).
SecurityProfile = Literal["standard", "fapi2"]

# Initial access tokens for dynamic client registration (RFC 7591 3).
DEFAULT_EXPIRES_IN = 24 * 3600
MAX_EXPIRES_IN = 365 * 24 * 3600
MAX_USES = 1000

# Sign-up at /auth/signup (authsvc.core.models.SIGNUP_MODES; docs/account.md).
SignupMode = Literal["off", "open", "restricted"]
SIGNUP_MODES: tuple[str, ...] = get_args(SignupMode)
# Which Client ID Metadata Documents a domain reads (authsvc.core.models.CLIENT_METADATA_MODES).
ClientMetadataMode = Literal["off", "allowlist", "any"]

# The role an invitation gives (authsvc.account.invitations.ROLES).
InvitationRole = Literal["user", "support", "admin"]
INVITATION_ROLES: tuple[str, ...] = get_args(InvitationRole)
