"""The console's blueprint, with the pages of every resource on it."""

from authsvc.admin.console import (
    api_keys,
    applications,
    branding,
    invitations,
    ldap_directories,
    mfa,
    registration_tokens,
    resource_servers,
    security_profile,
    signing_keys,
    sso_providers,
    trusted_issuers,
    users,
    webhooks,
)
from authsvc.admin.console.base import bp

# Imported for the routes they add to the blueprint.
__all__ = [
    "api_keys",
    "applications",
    "bp",
    "invitations",
    "branding",
    "ldap_directories",
    "mfa",
    "registration_tokens",
    "resource_servers",
    "security_profile",
    "signing_keys",
    "sso_providers",
    "trusted_issuers",
    "users",
    "webhooks",
]
