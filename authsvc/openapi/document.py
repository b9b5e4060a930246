"""Building the OpenAPI document: base.json (written by hand) and the admin schemas (generated).

base.json describes the paths and everything outside the admin API by hand.
The schemas of the admin API's bodies, what it reads and what it answers
(``#/components/schemas/DomainCreate``, ``Domain``, ``DomainList``...), are not
in it: they are generated from the pydantic models in authsvc.admin.schemas,
the request bodies from the very schemas the API validates with, so the
document cannot promise what the service refuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from authsvc.admin.schemas import (
    answers,
    api_keys,
    applications,
    branding,
    consent_texts,
    domains,
    invitations,
    issuers,
    ldap,
    registration_tokens,
    resource_servers,
    signing_keys,
    sso,
    users,
    webhooks,
)

HERE = Path(__file__).resolve().parent
BASE = HERE / "base.json"
DOCUMENT = HERE / "openapi.json"
REF = "#/components/schemas/"

# The component name in the document, and the model it is generated from.
REQUEST_BODIES: dict[str, type[BaseModel]] = {
    "DomainCreate": domains.DomainCreate,
    "DomainChange": domains.DomainChange,
    "MfaPolicy": domains.MfaPolicy,
    "BrandingChange": branding.BrandingChange,
    "ScopeDescriptionChange": consent_texts.ScopeDescriptionChange,
    "SigningKeyRotation": signing_keys.SigningKeyRotation,
    "ApplicationCreate": applications.ApplicationCreate,
    "ApplicationChange": applications.ApplicationChange,
    "UserCreate": users.UserCreate,
    "UserChange": users.UserChange,
    "IdentityLink": sso.IdentityLink,
    "ApiKeyCreate": api_keys.ApiKeyCreate,
    "ApiKeyChange": api_keys.ApiKeyChange,
    "RegistrationTokenCreate": registration_tokens.RegistrationTokenCreate,
    "InvitationCreate": invitations.InvitationCreate,
    "TrustedIssuerChange": issuers.TrustedIssuerChange,
    "ResourceServerCreate": resource_servers.ResourceServerCreate,
    "ResourceServerChange": resource_servers.ResourceServerChange,
    "OidcSsoProviderCreate": sso.OidcSsoProviderCreate,
    "SamlSsoProviderCreate": sso.SamlSsoProviderCreate,
    "OidcSsoProviderChange": sso.OidcSsoProviderChange,
    "SamlSsoProviderChange": sso.SamlSsoProviderChange,
    "LdapDirectoryCreate": ldap.LdapDirectoryCreate,
    "LdapDirectoryChange": ldap.LdapDirectoryChange,
    "WebhookCreate": webhooks.WebhookCreate,
    "WebhookChange": webhooks.WebhookChange,
}
ANSWERS: dict[str, type[BaseModel]] = {
    "Domain": domains.Domain,
    "DomainList": domains.DomainList,
    "MfaPolicySet": domains.MfaPolicySet,
    "Branding": branding.Branding,
    "BrandingLogo": branding.BrandingLogo,
    "ScopeDescriptionList": consent_texts.ScopeDescriptionList,
    "ScopeDescription": consent_texts.ScopeDescriptionItem,
    "ApplicationLogo": consent_texts.ApplicationLogo,
    "ApplicationLogoImage": consent_texts.ApplicationLogoImage,
    "SigningKey": signing_keys.SigningKey,
    "SigningKeyList": signing_keys.SigningKeyList,
    "Application": applications.Application,
    "CreatedApplication": applications.CreatedApplication,
    "RegeneratedSecret": applications.RegeneratedSecret,
    "ApplicationList": applications.ApplicationList,
    "User": users.User,
    "UserList": users.UserList,
    "Identity": users.Identity,
    "FactorsRemoved": users.FactorsRemoved,
    "ApiKey": api_keys.ApiKey,
    "CreatedApiKey": api_keys.CreatedApiKey,
    "ApiKeyList": api_keys.ApiKeyList,
    "RegistrationToken": registration_tokens.RegistrationToken,
    "CreatedRegistrationToken": registration_tokens.CreatedRegistrationToken,
    "RegistrationTokenList": registration_tokens.RegistrationTokenList,
    "Invitation": invitations.Invitation,
    "SentInvitation": invitations.SentInvitation,
    "InvitationList": invitations.InvitationList,
    "TrustedIssuer": issuers.TrustedIssuer,
    "TrustedIssuerList": issuers.TrustedIssuerList,
    "ResourceServer": resource_servers.ResourceServer,
    "ResourceServerList": resource_servers.ResourceServerList,
    "TokenExchange": applications.TokenExchange,
    "Webhook": webhooks.Webhook,
    "CreatedWebhook": webhooks.CreatedWebhook,
    "RotatedWebhookSecret": webhooks.RotatedWebhookSecret,
    "WebhookList": webhooks.WebhookList,
    "DeadLetter": webhooks.DeadLetter,
    "DeadLetterList": webhooks.DeadLetterList,
    "Replayed": webhooks.Replayed,
    "OidcSsoProvider": sso.OidcSsoProvider,
    "SamlSsoProvider": sso.SamlSsoProvider,
    "RefreshedSamlSsoProvider": sso.RefreshedSamlSsoProvider,
    "SsoProviderList": sso.SsoProviderList,
    "LdapDirectory": ldap.LdapDirectory,
    "LdapDirectoryList": ldap.LdapDirectoryList,
    "LdapDirectoryTest": ldap.LdapDirectoryTest,
    "AuditRecord": answers.AuditRecord,
    "AuditLog": answers.AuditLog,
    "Deleted": answers.Deleted,
    "DeletedApplication": answers.DeletedApplication,
    "InvalidInput": answers.InvalidInput,
}
# One body or answer of one model or another: an SSO provider is OpenID Connect / OAuth 2.0, or SAML.
EITHER: dict[str, tuple[str, list[str]]] = {
    "SsoProviderCreate": (
        "Give `issuer` (OpenID Connect), or `authorize_url`, `token_url` and `userinfo_url` (OAuth 2.0), or "
        "`preset` with `tenant`. Or `protocol` `saml` with the IdP's metadata.",
        ["OidcSsoProviderCreate", "SamlSsoProviderCreate"],
    ),
    "SsoProviderChange": (
        "Only the fields given change; which fields apply depends on the provider's protocol.",
        ["OidcSsoProviderChange", "SamlSsoProviderChange"],
    ),
    "SsoProvider": ("An OpenID Connect / OAuth 2.0 provider, or a SAML one.", ["OidcSsoProvider", "SamlSsoProvider"]),
}


def generated_schemas() -> dict[str, Any]:
    """The admin API's schemas as OpenAPI 3.1 schemas (JSON Schema 2020-12), by component name."""
    models = REQUEST_BODIES | ANSWERS
    names = {model.__name__: name for name, model in models.items()}
    out: dict[str, Any] = {}
    for name, model in models.items():
        schema = model.model_json_schema(ref_template=REF + "{model}")
        unnamed = set(schema.pop("$defs", {})) - set(names)
        if unnamed:
            raise ValueError(f"{name} refers to models with no component name: {', '.join(sorted(unnamed))}")
        out[name] = _renamed(_tidy(schema), names)
    for name, (description, choices) in EITHER.items():
        out[name] = {"description": description, "anyOf": [{"$ref": REF + choice} for choice in choices]}
    return out


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop what pydantic adds for its own sake: titles, and the ``default: null`` of fields that may be left out."""
    schema.pop("title", None)
    if "description" in schema:  # a docstring wrapped over lines reads as one paragraph
        schema["description"] = " ".join(schema["description"].split())
    for field in schema.get("properties", {}).values():
        field.pop("title", None)
        if field.get("default", 0) is None:
            del field["default"]
        for part in (field, *field.get("anyOf", ())):
            if part.get("minLength") == 0:
                del part["minLength"]
            if part.get("minItems") == 0:
                del part["minItems"]
    return schema


def _renamed(node: Any, names: dict[str, str]) -> Any:
    """``$ref``s to a model's class name turned into its component name."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF):
            return {**node, "$ref": REF + names[ref.removeprefix(REF)]}
        return {key: _renamed(value, names) for key, value in node.items()}
    if isinstance(node, list):
        return [_renamed(item, names) for item in node]
    return node


def build() -> dict[str, Any]:
    """The whole document: base.json with the generated request bodies among its components."""
    document = json.loads(BASE.read_text())
    schemas = document["components"]["schemas"]
    generated = generated_schemas()
    written_twice = sorted(set(schemas) & set(generated))
    if written_twice:
        raise ValueError(f"base.json describes generated schemas by hand: {', '.join(written_twice)}")
    schemas.update(generated)
    missing = sorted(_references(document) - {REF + name for name in schemas})
    if missing:
        raise ValueError(f"the document refers to schemas nobody describes: {', '.join(missing)}")
    return document


def _references(node: Any) -> set[str]:
    found: set[str] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(REF):
                found.add(ref)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return found


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
