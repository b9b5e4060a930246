"""What the service keeps in SQL: domains, applications, users, tokens, API keys.

Secrets (client secrets, tokens, API key secrets) are stored only as digests;
passwords as bcrypt hashes. Ids are integers here and strings in every JSON
answer.
"""

from sqlalchemy import exists
from sqlalchemy.orm import column_property

from authsvc.core.models.accounts import Consent, User
from authsvc.core.models.audit import AuditRecord
from authsvc.core.models.branding import DomainBranding
from authsvc.core.models.consent_text import ApplicationLogo, ScopeDescription
from authsvc.core.models.directory import LdapAccount, LdapDirectory
from authsvc.core.models.groups import ScimGroup, ScimGroupMember
from authsvc.core.models.identity import ExternalIdentity, SsoProvider
from authsvc.core.models.issuers import TrustedIssuer
from authsvc.core.models.keys import SigningKey
from authsvc.core.models.mfa import MfaFactor, RecoveryCode
from authsvc.core.models.registration import RegistrationToken
from authsvc.core.models.spent_codes import SpentCode
from authsvc.core.models.tenancy import (
    ACCESS_TOKEN_FORMATS,
    CLIENT_METADATA_ALLOWLIST,
    CLIENT_METADATA_ANY,
    CLIENT_METADATA_MODES,
    CLIENT_METADATA_OFF,
    DEFAULT_DOMAIN_SCOPES,
    DEVICE_CODE_GRANT_TYPE,
    FAPI2_PROFILE,
    JWT_BEARER_GRANT_TYPE,
    PROFILES,
    RESERVED_SCOPES,
    SIGNUP_MODES,
    SIGNUP_OFF,
    SIGNUP_OPEN,
    SIGNUP_RESTRICTED,
    STANDARD_PROFILE,
    TOKEN_EXCHANGE_GRANT_TYPE,
    AccessTokenFormat,
    Application,
    Domain,
    ResourceServer,
)
from authsvc.core.models.tokens import API_KEY_PERMISSIONS, ApiKey, ApiKeyPermission, Token, capped_permissions

# Whether the user has an entry in a directory, read with the user (an EXISTS on an indexed column):
# a session or a refresh of a user of no directory asks nothing more (ldap_signin.still_allowed).
User.directory_linked = column_property(exists().where(LdapAccount.user_id == User.id))

__all__ = [
    "ACCESS_TOKEN_FORMATS",
    "API_KEY_PERMISSIONS",
    "CLIENT_METADATA_ALLOWLIST",
    "CLIENT_METADATA_ANY",
    "CLIENT_METADATA_MODES",
    "CLIENT_METADATA_OFF",
    "DEFAULT_DOMAIN_SCOPES",
    "DEVICE_CODE_GRANT_TYPE",
    "FAPI2_PROFILE",
    "JWT_BEARER_GRANT_TYPE",
    "PROFILES",
    "RESERVED_SCOPES",
    "SIGNUP_MODES",
    "SIGNUP_OFF",
    "SIGNUP_OPEN",
    "SIGNUP_RESTRICTED",
    "STANDARD_PROFILE",
    "TOKEN_EXCHANGE_GRANT_TYPE",
    "AccessTokenFormat",
    "ApiKey",
    "ApiKeyPermission",
    "Application",
    "ApplicationLogo",
    "AuditRecord",
    "Consent",
    "Domain",
    "ResourceServer",
    "DomainBranding",
    "ExternalIdentity",
    "LdapAccount",
    "LdapDirectory",
    "MfaFactor",
    "RecoveryCode",
    "RegistrationToken",
    "ScimGroup",
    "ScopeDescription",
    "ScimGroupMember",
    "SigningKey",
    "SpentCode",
    "SsoProvider",
    "Token",
    "TrustedIssuer",
    "User",
    "capped_permissions",
]
