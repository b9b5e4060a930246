"""Administration: the verbs shared by the admin API and the console (docs/platform.md#domains-and-applications).

One module per resource; this package re-exports the verbs, which is how the
API (authsvc.admin.api) and the console (authsvc.admin.console) call them.

Who may: an admin credential changes its domain, a support credential reads
it, a system admin reaches every domain. Every change is validated field by
field and saved together with its audit record (before/after, no secrets).
"""

from authsvc.admin.actors import Actor, command_line, get
from authsvc.admin.api_keys import create_api_key, revoke_api_key, update_api_key
from authsvc.admin.applications import create_application, delete_application, regenerate_secret, update_application
from authsvc.admin.domains import (
    add_domain_scopes,
    create_domain,
    delete_domain,
    remove_domain_scopes,
    update_domain,
)
from authsvc.admin.ldap_directories import (
    check_ldap_directory,
    create_ldap_directory,
    delete_ldap_directory,
    update_ldap_directory,
)
from authsvc.admin.listing import listing, serialise
from authsvc.admin.mfa import reset_factors, set_policy
from authsvc.admin.registration_tokens import create_registration_token, revoke_registration_token
from authsvc.admin.resource_servers import create_resource_server
from authsvc.admin.saml_providers import refresh_saml_metadata
from authsvc.admin.signing_keys import rotate_signing_key, signing_keys
from authsvc.admin.sso_providers import (
    SSO_URL_FIELDS,
    create_sso_provider,
    delete_sso_provider,
    link_identity,
    sso_json,
    update_sso_provider,
)
from authsvc.admin.users import (
    clear_user_resource_tokens,
    create_user,
    delete_user,
    revoke_user_tokens,
    update_user,
    update_user_counting_revoked,
    user_domain,
    user_resource_token,
)
from authsvc.core.errors import Conflict, Forbidden, NotFound, ValidationFailed

__all__ = [
    "reset_factors",
    "set_policy",
    "Actor",
    "Conflict",
    "Forbidden",
    "NotFound",
    "SSO_URL_FIELDS",
    "ValidationFailed",
    "check_ldap_directory",
    "add_domain_scopes",
    "clear_user_resource_tokens",
    "command_line",
    "create_api_key",
    "create_application",
    "create_domain",
    "create_registration_token",
    "create_resource_server",
    "create_ldap_directory",
    "create_sso_provider",
    "create_user",
    "delete_application",
    "delete_domain",
    "delete_ldap_directory",
    "delete_sso_provider",
    "delete_user",
    "get",
    "link_identity",
    "listing",
    "refresh_saml_metadata",
    "regenerate_secret",
    "remove_domain_scopes",
    "revoke_api_key",
    "revoke_registration_token",
    "revoke_user_tokens",
    "rotate_signing_key",
    "serialise",
    "signing_keys",
    "sso_json",
    "update_api_key",
    "update_application",
    "update_domain",
    "update_ldap_directory",
    "update_sso_provider",
    "update_user",
    "update_user_counting_revoked",
    "user_domain",
    "user_resource_token",
]
