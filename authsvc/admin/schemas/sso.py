"""SSO providers of a domain (OpenID Connect / OAuth 2.0, SAML 2.0): created, changed, shown; linking an account."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints

from authsvc.admin.schemas.answers import EPOCH, Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import Choice, DomainId, Name, Secret, Text, Whole
from authsvc.core import validation
from authsvc.sso import providers, saml_setup

URL_DESCRIPTION = (
    "An absolute https URL to a public address (loopback, private addresses and http on loopback only with "
    "allow_private_network)."
)


def ProviderUrl(name: str, description: str = URL_DESCRIPTION) -> Any:  # noqa: N802
    """A URL the service calls at the provider; its problems name the field ``name``."""
    return Text(500, rule=lambda url: validation.provider_url(url, name), description=description)


# A mapping's names as given: a claim or parameter name is not trimmed.
MappingName = Annotated[str, StringConstraints(strip_whitespace=False)]


def Mapping(values: dict[str, Any], accepts: Callable[[Any], bool], message: str, **field: Any) -> Any:  # noqa: N802
    """A JSON object whose every value ``accepts`` takes (``values``: their JSON schema), kept as given."""

    def check(mapping: dict[str, Any]) -> dict[str, Any]:
        if not all(accepts(value) for value in mapping.values()):
            raise validation.Invalid(message)
        return mapping

    extra = {"additionalProperties": values}
    return Annotated[dict[MappingName, Any], AfterValidator(check), Field(json_schema_extra=extra, **field)]


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def ClaimLists(**field: Any) -> Any:  # noqa: N802
    """Names mapped to lists of strings: profile mappings and match rules."""
    strings = {"type": "array", "items": {"type": "string"}}
    return Mapping(strings, _is_strings, "must map names to lists of strings", **field)


def _authorize_params(params: dict[str, Any]) -> dict[str, Any]:
    problem = providers.authorize_params_problem(params)
    if problem:
        raise validation.Invalid(problem)
    return params


AuthorizeParams = Annotated[
    Mapping(
        {"type": "string"},
        lambda value: isinstance(value, str),
        "must map names to strings",
        description='Extra authorise parameters, e.g. `{"prompt": "login"}`. Not state, nonce, redirect_uri, '
        "client_id, response_type, code_challenge, code_challenge_method or scope.",
    ),
    AfterValidator(_authorize_params),
]
ClientId = Text(255, min_length=1)
ClientSecret = Secret(
    2000, min_length=1, description="Our client secret at the provider; stored encrypted, never shown."
)
Issuer = ProviderUrl("issuer", "OpenID Connect issuer; endpoints come from its discovery document.")
Scopes = Text(
    2000, rule=validation.scopes, description="Default `openid email profile` (OpenID Connect) or `email profile`."
)
TrustEmail = Annotated[
    bool, Field(description="Link to an existing user by e-mail even when the provider does not assert it verified.")
]
AllowPrivateNetwork = Annotated[
    bool, Field(description="Only a system admin may set it true. A change of a URL by anyone else sets it false.")
]


class _OidcSettings(Schema):
    issuer: Issuer = None
    authorize_url: ProviderUrl("authorize_url") = None
    token_url: ProviderUrl("token_url") = None
    userinfo_url: ProviderUrl("userinfo_url") = None
    jwks_url: ProviderUrl("jwks_url") = None
    scopes: Scopes = None
    required_scopes: Text(2000) = None
    authorize_params: AuthorizeParams = None
    token_endpoint_auth_method: Choice("client_secret_post", "client_secret_basic") = None
    profile_mappings: ClaimLists(description="Our user field (uid, email, name, ...) -> claim names.") = None
    match_rules: ClaimLists(description="Claim name (or `email_domain`) -> allowed values.") = None
    trust_email: TrustEmail = None
    allow_private_network: AllowPrivateNetwork = None


class OidcSsoProviderCreate(_OidcSettings):
    """Give `issuer` (OpenID Connect), or `authorize_url`, `token_url` and `userinfo_url` (OAuth 2.0), or `preset`
    with `tenant`."""

    domain: DomainId = None
    name: Name()
    client_id: ClientId
    client_secret: ClientSecret
    preset: Choice("microsoft", description="Fill endpoints, scopes and mappings (Microsoft Entra ID).") = None
    tenant: Text(100, description="With the microsoft preset: the tenant's id or domain, or `organizations`.") = None


class OidcSsoProviderChange(_OidcSettings):
    """Only the fields given change."""

    name: Name() = None
    client_id: ClientId = None
    client_secret: ClientSecret = None


MetadataUrl = ProviderUrl("metadata_url", "SAML: the IdP's metadata URL (refetched when stale).")
MetadataXml = Text(saml_setup.MAX_METADATA_BYTES, description="SAML: the IdP's metadata document.")
Attribute = Text(255)
ClockSkew = Whole(0, 600, "must be between 0 and 600 seconds")


class _SamlSettings(Schema):
    metadata_url: MetadataUrl = None
    metadata_xml: MetadataXml = None
    email_attribute: Attribute = None
    name_attribute: Attribute = None
    groups_attribute: Attribute = None
    allow_unsolicited: bool = None
    clock_skew: ClockSkew = None
    trust_email: TrustEmail = None
    allow_private_network: AllowPrivateNetwork = None


class SamlSsoProviderCreate(_SamlSettings):
    """A SAML 2.0 provider: `protocol` `saml`, a name, and `metadata_url` or `metadata_xml`."""

    protocol: Literal["saml"] = Field(description="`saml` for a SAML 2.0 IdP; the other fields below are SAML's.")
    domain: DomainId = None
    name: Name()


class SamlSsoProviderChange(_SamlSettings):
    """Only the fields given change. New metadata (a document, or a URL's) is read before anything is saved."""

    name: Name() = None


class IdentityLink(Schema):
    """An account at one of the user's domain's SSO providers, to link to the user."""

    provider: Text(32, min_length=1, description="The SSO provider's id (of the user's domain).")
    subject: Text(
        255, min_length=1, description="The user's id at the provider (the profile's `uid`, e.g. the ID token's `sub`)."
    )


# Answers

PUBLIC_ID = "The public id of `/auth/oauth2?id=`."
Claims = dict[str, list[str]]


class OidcSsoProvider(Answer):
    """The client secret is never shown."""

    id: str = Field(description=PUBLIC_ID)
    domain: str = Field(description="The domain's id.")
    name: str = Field(description="Shown on the sign-in button.")
    kind: Literal["oidc", "oauth2"]
    protocol: Literal["oidc", "oauth2"] = Field(description="The same as `kind`.")
    client_id: str = Field(description="Our client id at the provider.")
    issuer: str | None
    authorize_url: str | None
    token_url: str | None
    userinfo_url: str | None
    scopes: str = Field(description="Space-separated scopes asked of the provider.")
    required_scopes: str = Field(description="Space-separated scopes that must be granted.")
    authorize_params: dict[str, str]
    token_endpoint_auth_method: Literal["client_secret_post", "client_secret_basic"]
    profile_mappings: Claims = Field(description="Our user field -> the provider's claim names, in order.")
    match_rules: dict[str, Any] = Field(
        description="Claim name -> allowed values; `email_domain` checks the e-mail's domain."
    )
    trust_email: bool
    allow_private_network: bool = Field(
        description="Requests to this provider may reach loopback, private networks and plain http (an on-premises "
        "provider); set only by a system admin."
    )
    preset: str | None
    tenant: str | None
    callback_url: str = Field(default=None, description="The redirect URI to register at the provider.")
    admin_consent_url: str = Field(
        default=None, description="Microsoft preset: where a tenant administrator grants the permissions."
    )
    missing_scopes: list[str] | None = Field(
        default=None,
        description="With required_scopes: those the latest sign-in was not granted; null before any sign-in.",
    )


class SamlSsoProvider(Answer):
    """A SAML 2.0 provider. Our private key is never shown."""

    id: str = Field(description=PUBLIC_ID)
    domain: str
    name: str
    kind: Literal["saml"]
    protocol: Literal["saml"]
    idp_entity_id: str = Field(description="The IdP's entity id, from its metadata.")
    idp_metadata_url: str | None = Field(
        description="Where the IdP metadata is refetched from; null when given as a document."
    )
    idp_metadata_fetched_at: int | None = Field(description=EPOCH)
    sp_certificate: str = Field(description="Our signing and encryption certificate (PEM) for this provider.")
    profile_mappings: Claims = Field(description="email, name, groups -> the IdP's attribute name.")
    match_rules: dict[str, Any]
    trust_email: bool
    allow_private_network: bool
    allow_unsolicited: bool = Field(description="IdP-initiated responses are accepted (they carry no browser binding).")
    clock_skew: int = Field(description="Seconds of clock difference allowed on NotBefore / NotOnOrAfter.")
    callback_url: str = Field(default=None, description="The ACS (Reply URL) to register at the IdP.")
    metadata_url: str = Field(default=None, description="Our SP metadata for this provider.")
    entity_id: str = Field(default=None, description="Our entity id (Identifier) at the IdP.")
    email_attribute: str | None = None
    name_attribute: str | None = None
    groups_attribute: str | None = None


class RefreshedSamlSsoProvider(SamlSsoProvider):
    """The provider, with `changed`: whether the metadata differed."""

    changed: bool


class SsoProviderList(Page):
    items: list[OidcSsoProvider | SamlSsoProvider]
