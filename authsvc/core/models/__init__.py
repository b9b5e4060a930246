"""What the service keeps in SQL: domains, applications, users, tokens, API keys.

Secrets (client secrets, tokens, API key secrets) are stored only as digests;
passwords as bcrypt hashes. Ids are integers here and strings in every JSON
answer.
"""

from authsvc.core.models.accounts import Consent, User
from authsvc.core.models.audit import AuditRecord
from authsvc.core.models.directory import LdapAccount, LdapDirectory
from authsvc.core.models.identity import ExternalIdentity, SsoProvider
from authsvc.core.models.keys import SigningKey
from authsvc.core.models.mfa import MfaFactor, RecoveryCode
from authsvc.core.models.registration import RegistrationToken
from authsvc.core.models.spent_codes import SpentCode
from authsvc.core.models.tenancy import (
    DEFAULT_DOMAIN_SCOPES,
    DEVICE_CODE_GRANT_TYPE,
    RESERVED_SCOPES,
    Application,
    Domain,
)
from authsvc.core.models.tokens import API_KEY_PERMISSIONS, ApiKey, Token, capped_permissions

__all__ = [
    "API_KEY_PERMISSIONS",
    "DEFAULT_DOMAIN_SCOPES",
    "DEVICE_CODE_GRANT_TYPE",
    "RESERVED_SCOPES",
    "ApiKey",
    "Application",
    "AuditRecord",
    "Consent",
    "Domain",
    "ExternalIdentity",
    "LdapAccount",
    "LdapDirectory",
    "MfaFactor",
    "RecoveryCode",
    "RegistrationToken",
    "SigningKey",
    "SpentCode",
    "SsoProvider",
    "Token",
    "User",
    "capped_permissions",
]
