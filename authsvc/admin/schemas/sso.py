"""SSO providers of a domain (OpenID Connect / OAuth 2.0, SAML 2.0): created, changed, shown; linking an account."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from annotated_types import GroupedMetadata
from pydantic import AfterValidator, Field, StringConstraints

from authsvc.admin.schemas.answers import EPOCH, Answer, Page
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import SECRET, TRIMMED, DomainId, Name, Omissible, Text, Whole
from authsvc.core import validation
from authsvc.sso import providers, saml_setup

URL_DESCRIPTION = (
    "An absolute https URL to a public address (loopback, private addresses and http on loopback only with "
    "allow_private_network)."
)


def provider_url(name: str) -> Text:
    """On a str: a URL the service calls at the provider; its problems name the field ``name``."""
    return Text(500, rule=lambda url: validation.provider_url(url, name))


# A mapping's names as given: a claim or parameter name is not trimmed.
MappingName = Annotated[str, StringConstraints(strip_whitespace=False)]


@dataclass(frozen=True)
class Mapping(GroupedMetadata):
    """On a JSON object: every value ``accepts`` takes (``values``: their JSON schema), kept as given."""

    values: dict[str, Any]
    accepts: Callable[[Any], bool]
    message: str

    def __iter__(self) -> Iterator[object]:
        yield AfterValidator(self.check)
        yield Field(json_schema_extra={"additionalProperties": self.values})

    def check(self, mapping: dict[str, Any]) -> dict[str, Any]:
        if not all(self.accepts(value) for value in mapping.values()):
            raise validation.Invalid(self.message)
        return mapping


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# Names mapped to lists of strings: profile mappings and match rules. (The values stay Any to the
# type checker: the mapping is kept as given, and ``Mapping`` checks them.)
ClaimLists = Annotated[
    dict[MappingName, Any],
    Mapping({"type": "array", "items": {"type": "string"}}, _is_strings, "must map names to lists of strings"),
]


def _authorize_params(params: dict[str, Any]) -> dict[str, Any]:
    problem = providers.authorize_params_problem(params)
    if problem:
        raise validation.Invalid(problem)
    return params


AuthorizeParams = Annotated[
    dict[MappingName, Any],
    Mapping({"type": "string"}, lambda value: isinstance(value, str), "must map names to strings"),
    Field(
        description='Extra authorise parameters, e.g. `{"prompt": "login"}`. Not state, nonce, redirect_uri, '
        "client_id, response_type, code_challenge, code_challenge_method or scope."
    ),
    AfterValidator(_authorize_params),
]
ClientId = Annotated[str, Text(255, min_length=1)]
ClientSecret = Annotated[
    str,
    Text(2000, min_length=1),
    SECRET,
    Field(description="Our client secret at the provider; stored encrypted, never shown."),
]
Issuer = Annotated[
    str,
    provider_url("issuer"),
    Field(description="OpenID Connect issuer; endpoints come from its discovery document."),
]
Scopes = Annotated[
    str,
    Text(2000, rule=validation.scopes),
    Field(description="Default `openid email profile` (OpenID Connect) or `email profile`."),
]
TrustEmail = Annotated[
    bool, Field(description="Link to an existing user by e-mail even when the provider does not assert it verified.")
]
AllowPrivateNetwork = Annotated[
    bool, Field(description="Only a system admin may set it true. A change of a URL by anyone else sets it false.")
]


AuthorizeUrl = Annotated[str, provider_url("authorize_url"), Field(description=URL_DESCRIPTION)]
TokenUrl = Annotated[str, provider_url("token_url"), Field(description=URL_DESCRIPTION)]
UserinfoUrl = Annotated[str, provider_url("userinfo_url"), Field(description=URL_DESCRIPTION)]
JwksUrl = Annotated[str, provider_url("jwks_url"), Field(description=URL_DESCRIPTION)]


class _OidcSettings(Schema):
    issuer: Omissible[Issuer] = None
    authorize_url: Omissible[AuthorizeUrl] = None
    token_url: Omissible[TokenUrl] = None
    userinfo_url: Omissible[UserinfoUrl] = None
    jwks_url: Omissible[JwksUrl] = None
    scopes: Omissible[Scopes] = None
    required_scopes: Omissible[Annotated[str, Text(2000)]] = None
    authorize_params: Omissible[AuthorizeParams] = None
    token_endpoint_auth_method: Omissible[Annotated[Literal["client_secret_post", "client_secret_basic"], TRIMMED]] = (
        None
    )
    profile_mappings: Omissible[
        Annotated[ClaimLists, Field(description="Our user field (uid, email, name, ...) -> claim names.")]
    ] = None
    match_rules: Omissible[
        Annotated[ClaimLists, Field(description="Claim name (or `email_domain`) -> allowed values.")]
    ] = None
    trust_email: Omissible[TrustEmail] = None
    allow_private_network: Omissible[AllowPrivateNetwork] = None


class OidcSsoProviderCreate(_OidcSettings):
    """Give `issuer` (OpenID Connect), or `authorize_url`, `token_url` and `userinfo_url` (OAuth 2.0), or `preset`
    with `tenant`."""

    domain: Omissible[DomainId] = None
    name: Name
    client_id: ClientId
    client_secret: ClientSecret
    preset: Omissible[
        Annotated[
            Literal["microsoft"],
            TRIMMED,
            Field(description="Fill endpoints, scopes and mappings (Microsoft Entra ID)."),
        ]
    ] = None
    tenant: Omissible[
        Annotated[
            str,
            Text(100),
            Field(description="With the microsoft preset: the tenant's id or domain, or `organizations`."),
        ]
    ] = None


class OidcSsoProviderChange(_OidcSettings):
    """Only the fields given change."""

    name: Omissible[Name] = None
    client_id: Omissible[ClientId] = None
    client_secret: Omissible[ClientSecret] = None


MetadataUrl = Annotated[
    str,
    provider_url("metadata_url"),
    Field(description="SAML: the IdP's metadata URL (refetched when stale)."),
]
MetadataXml = Annotated[
    str, Text(saml_setup.MAX_METADATA_BYTES), Field(description="SAML: the IdP's metadata document.")
]
Attribute = Annotated[str, Text(255)]
ClockSkew = Annotated[int, Whole(0, 600, "must be between 0 and 600 seconds")]


class _SamlSettings(Schema):
    metadata_url: Omissible[MetadataUrl] = None
    metadata_xml: Omissible[MetadataXml] = None
    email_attribute: Omissible[Attribute] = None
    name_attribute: Omissible[Attribute] = None
    groups_attribute: Omissible[Attribute] = None
    allow_unsolicited: Omissible[bool] = None
    clock_skew: Omissible[ClockSkew] = None
    trust_email: Omissible[TrustEmail] = None
    allow_private_network: Omissible[AllowPrivateNetwork] = None


class SamlSsoProviderCreate(_SamlSettings):
    """A SAML 2.0 provider: `protocol` `saml`, a name, and `metadata_url` or `metadata_xml`."""

    protocol: Literal["saml"] = Field(description="`saml` for a SAML 2.0 IdP; the other fields below are SAML's.")
    domain: Omissible[DomainId] = None
    name: Name


class SamlSsoProviderChange(_SamlSettings):
    """Only the fields given change. New metadata (a document, or a URL's) is read before anything is saved."""

    name: Omissible[Name] = None


class IdentityLink(Schema):
    """An account at one of the user's domain's SSO providers, to link to the user."""

    provider: Annotated[str, Text(32, min_length=1), Field(description="The SSO provider's id (of the user's domain).")]
    subject: Annotated[
        str,
        Text(255, min_length=1),
        Field(description="The user's id at the provider (the profile's `uid`, e.g. the ID token's `sub`)."),
    ]


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
    callback_url: Omissible[str] = Field(default=None, description="The redirect URI to register at the provider.")
    admin_consent_url: Omissible[str] = Field(
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
    callback_url: Omissible[str] = Field(default=None, description="The ACS (Reply URL) to register at the IdP.")
    metadata_url: Omissible[str] = Field(default=None, description="Our SP metadata for this provider.")
    entity_id: Omissible[str] = Field(default=None, description="Our entity id (Identifier) at the IdP.")
    email_attribute: str | None = None
    name_attribute: str | None = None
    groups_attribute: str | None = None


class RefreshedSamlSsoProvider(SamlSsoProvider):
    """The provider, with `changed`: whether the metadata differed."""

    changed: bool


class SsoProviderList(Page):
    items: list[OidcSsoProvider | SamlSsoProvider]
