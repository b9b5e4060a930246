"""``sso``: single sign-on providers of a domain (docs/sso.md, docs/platform.md#single-sign-on)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc import admin
from authsvc.cli.common import admin_rules, domain_by_host, emit
from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.models import Domain, SsoProvider
from authsvc.core.settings import settings
from authsvc.sso import providers, saml, saml_setup

sso = AppGroup("sso", help="Single sign-on providers of a domain.")

# The admin fields whose options are named otherwise.
SSO_OPTIONS: dict[str, str | None] = {
    "scopes": "--scope",
    "authorize_params": "--param",
    "profile_mappings": "--map",
    "match_rules": "--match",
    "required_scopes": "--required-scope",
    "token_endpoint_auth_method": "--auth-method",
    "metadata_xml": "--metadata-file",
}


def _pairs(values: tuple[str, ...], what: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip():
            raise click.ClickException(f"{what} must look like NAME=VALUE, not {value!r}")
        pairs[key.strip()] = rest.strip()
    return pairs


def _lists(values: tuple[str, ...], what: str) -> dict[str, list[str]]:
    """``NAME=a,b`` options as ``{"NAME": ["a", "b"]}``."""
    return {k: [c.strip() for c in v.split(",") if c.strip()] for k, v in _pairs(values, what).items()}


@sso.command("create")
@click.option("--domain", "host", required=True)
@click.option("--name", required=True, help="Shown on the sign-in button.")
@click.option(
    "--protocol",
    type=click.Choice(["oidc", "oauth2", "saml"]),
    help="Default: oidc with --issuer, oauth2 with the three URLs. saml needs --metadata-url or --metadata-file.",
)
@click.option("--client-id", help="Our client id at the provider (OIDC, OAuth 2.0).")
@click.option("--client-secret", help="Our client secret at the provider (stored encrypted).")
@click.option("--metadata-url", help="SAML: the IdP's metadata URL (refetched when stale: new certificates).")
@click.option("--metadata-file", type=click.File("r"), help="SAML: the IdP's metadata XML file.")
@click.option("--email-attribute", help="SAML: the attribute holding the e-mail address.")
@click.option("--name-attribute", help="SAML: the attribute holding the display name.")
@click.option("--groups-attribute", help="SAML: the attribute holding the groups (the user's groups).")
@click.option("--allow-unsolicited", is_flag=True, help="SAML: accept IdP-initiated sign-ins (no browser binding).")
@click.option("--clock-skew", type=click.IntRange(0, 600), default=60, help="SAML: seconds of clock difference.")
@click.option("--issuer", help="OpenID Connect issuer; endpoints come from its discovery document.")
@click.option("--authorize-url")
@click.option("--token-url")
@click.option("--userinfo-url")
@click.option("--jwks-url", help="JSON Web Key Set of an OIDC provider (else from discovery).")
@click.option("--scope", "scopes", help='Default: "openid email profile" (OIDC) or "email profile".')
@click.option("--preset", type=click.Choice(["microsoft"]), help="Fill endpoints, scopes and mappings.")
@click.option("--tenant", help="Microsoft Entra tenant (id or domain) for --preset microsoft.")
@click.option("--auth-method", type=click.Choice(["client_secret_post", "client_secret_basic"]))
@click.option("--param", "params", multiple=True, help="Extra authorise parameter NAME=VALUE (e.g. prompt=login).")
@click.option("--map", "maps", multiple=True, help="Profile mapping FIELD=claim1,claim2 (fields: uid email name ...).")
@click.option("--match", "matches", multiple=True, help="Match rule CLAIM=value1,value2 (or email_domain=...).")
@click.option("--trust-email", is_flag=True, help="Link to an existing user by e-mail even if not verified.")
@click.option("--required-scope", "required", help="Scopes that must be granted (sso check).")
@click.option(
    "--allow-private-network",
    is_flag=True,
    help="An on-premises provider: its URLs may be loopback or private addresses (and http on loopback).",
)
def create_sso(host: str, name: str, protocol: str | None, **options: Any) -> None:
    """Create a provider: the options of its protocol are read by that protocol's half below."""
    domain = domain_by_host(host)
    if protocol == "saml":
        _create_saml(domain, name, _options(SamlOptions, options))
    else:
        _create_oauth(domain, name, protocol, _options(OAuthOptions, options), options)


@dataclass(frozen=True)
class SamlOptions:
    """``sso create --protocol saml``'s own options."""

    metadata_url: str | None
    metadata_file: Any  # an open file (click.File)
    email_attribute: str | None
    name_attribute: str | None
    groups_attribute: str | None
    allow_unsolicited: bool
    clock_skew: int
    trust_email: bool
    allow_private_network: bool


@dataclass(frozen=True)
class OAuthOptions:
    """``sso create``'s options for an OpenID Connect or OAuth 2.0 provider."""

    client_id: str | None
    client_secret: str | None
    issuer: str | None
    authorize_url: str | None
    token_url: str | None
    userinfo_url: str | None
    jwks_url: str | None
    scopes: str | None
    preset: str | None
    tenant: str | None
    auth_method: str | None
    params: tuple[str, ...]
    maps: tuple[str, ...]
    matches: tuple[str, ...]
    trust_email: bool
    required: str | None
    allow_private_network: bool


# Options that only a SAML provider takes (--clock-skew has a default, so it is always given).
_SAML_ONLY = (
    "metadata_url",
    "metadata_file",
    "email_attribute",
    "name_attribute",
    "groups_attribute",
    "allow_unsolicited",
)


_Options = TypeVar("_Options", SamlOptions, OAuthOptions)


def _options(kind: type[_Options], options: dict[str, Any]) -> _Options:
    """The options of one protocol, out of all that click passed."""
    return kind(**{field.name: options[field.name] for field in fields(kind)})


def _create_oauth(
    domain: Domain, name: str, protocol: str | None, options: OAuthOptions, given: dict[str, Any]
) -> None:
    # How the options go together is the command line's to say, in its own words.
    if any(given[option] for option in _SAML_ONLY):
        raise click.ClickException("--metadata-url, --metadata-file and the attribute options go with --protocol saml")
    _check_oauth_options(protocol, options)
    urls = {
        # The command line has always stored an issuer without its trailing slash.
        "issuer": options.issuer.rstrip("/") if options.issuer else None,
        "authorize_url": options.authorize_url,
        "token_url": options.token_url,
        "userinfo_url": options.userinfo_url,
        "jwks_url": options.jwks_url,
    }
    data: dict[str, Any] = {
        "domain": str(domain.id),
        "name": name,
        "client_id": options.client_id,
        "client_secret": options.client_secret,
        "scopes": options.scopes,
        "preset": options.preset,
        "tenant": options.tenant,
        "token_endpoint_auth_method": options.auth_method,
        "authorize_params": _pairs(options.params, "--param"),
        "profile_mappings": _lists(options.maps, "--map"),
        "match_rules": _lists(options.matches, "--match"),
        "trust_email": options.trust_email,
        "required_scopes": options.required,
        "allow_private_network": options.allow_private_network,
        **urls,
    }
    hints = {"trust_email": "--match tid=<tenant id>"}
    if not (options.allow_private_network or settings().sso_allow_private_networks):
        for field, url in urls.items():
            if url and _private(url):
                hints[field] = "--allow-private-network for an on-premises provider"
    with admin_rules(SSO_OPTIONS, hints):
        provider = admin.create_sso_provider(admin.command_line(), {k: v for k, v in data.items() if v is not None})
    out = {"id": provider.id, "callback_url": _callback_url(domain)}
    consent = providers.admin_consent_url(provider, out["callback_url"])
    if consent:
        out["admin_consent_url"] = consent
    emit(out)


def _check_oauth_options(protocol: str | None, options: OAuthOptions) -> None:
    three_urls = options.authorize_url and options.token_url and options.userinfo_url
    if not options.client_id or not options.client_secret:
        raise click.ClickException("--client-id and --client-secret are needed (or --protocol saml)")
    if protocol == "oidc" and not options.issuer or protocol == "oauth2" and not three_urls:
        raise click.ClickException("--protocol oidc needs --issuer; oauth2 needs the three URLs")
    if options.preset == "microsoft" and not options.tenant:
        raise click.ClickException("--preset microsoft needs --tenant (a tenant id or domain, or organizations)")
    if options.tenant and options.preset != "microsoft":
        raise click.ClickException("--tenant goes with --preset microsoft")
    if not (options.preset or options.issuer or three_urls):
        raise click.ClickException("give --issuer, or --authorize-url, --token-url and --userinfo-url, or a --preset")


def _create_saml(domain: Domain, name: str, options: SamlOptions) -> None:
    metadata_url, metadata_file = options.metadata_url, options.metadata_file
    if bool(metadata_url) == bool(metadata_file):
        raise click.ClickException("--protocol saml needs --metadata-url or --metadata-file (one of them)")
    data: dict[str, Any] = {
        "protocol": "saml",
        "domain": str(domain.id),
        "name": name,
        "email_attribute": options.email_attribute,
        "name_attribute": options.name_attribute,
        "groups_attribute": options.groups_attribute,
        "allow_unsolicited": options.allow_unsolicited,
        "clock_skew": options.clock_skew,
        "trust_email": options.trust_email,
        "allow_private_network": options.allow_private_network,
    }
    if metadata_url:
        data["metadata_url"] = metadata_url
    else:
        data["metadata_xml"] = metadata_file.read(saml_setup.MAX_METADATA_BYTES + 1)
    hints = {}
    if metadata_url and not (data["allow_private_network"] or settings().sso_allow_private_networks):
        if _private(metadata_url):
            hints["metadata_url"] = "--allow-private-network for an on-premises provider"
    with admin_rules(SSO_OPTIONS, hints):
        provider = admin.create_sso_provider(admin.command_line(), {k: v for k, v in data.items() if v is not None})
    emit(_saml_urls(domain, provider))


def _saml_urls(domain: Domain, provider: SsoProvider) -> dict[str, str]:
    urls = saml.sp_urls(domain.host, provider.id)
    return {
        "id": provider.id,
        "callback_url": urls["acs_url"],
        "metadata_url": urls["metadata_url"],
        "entity_id": urls["entity_id"],
    }


def _private(url: str) -> bool:
    """Whether a well-formed ``url`` is refused only because it is on a private network (or plain http)."""
    try:
        validation.provider_url(url, "url")
    except validation.Invalid:
        return False
    return validation.public_url_problem(url) is not None


def _callback_url(domain: Domain) -> str:
    return f"https://{domain.host}/auth/oauth2/callback"


def _provider(provider_id: str) -> SsoProvider:
    provider = db.session.get(SsoProvider, provider_id) if len(provider_id) <= 32 else None
    if provider is None:
        raise click.ClickException(f"no SSO provider with id {provider_id!r}")
    return provider


@sso.command("list")
@click.option("--domain", "host", help="Only this domain's providers.")
def list_sso(host: str | None) -> None:
    query = select(SsoProvider).order_by(SsoProvider.created_at, SsoProvider.id)
    if host:
        query = query.where(SsoProvider.domain_id == domain_by_host(host).id)
    emit({"sso": [p.as_json() for p in db.session.scalars(query)]})


@sso.command("show")
@click.argument("provider_id")
def show_sso(provider_id: str) -> None:
    provider = _provider(provider_id)
    domain = db.session.get_one(Domain, provider.domain_id)  # a provider's domain is there: the key says so
    if provider.kind == "saml":
        emit(provider.as_json() | _saml_urls(domain, provider))
        return
    out = provider.as_json() | {"callback_url": _callback_url(domain)}
    consent = providers.admin_consent_url(provider, out["callback_url"])
    if consent:
        out["admin_consent_url"] = consent
    emit(out)


@sso.command("check")
@click.argument("provider_id")
def check_sso(provider_id: str) -> None:
    """List the required permissions the latest sign-in was not granted (admin consent missing)."""
    emit(providers.check(_provider(provider_id)))


@sso.command("refresh-metadata")
@click.argument("provider_id")
def refresh_metadata(provider_id: str) -> None:
    """Refetch a SAML provider's IdP metadata now (a new signing certificate at the IdP)."""
    provider = _provider(provider_id)
    with admin_rules({"id": None}):
        changed = admin.refresh_saml_metadata(admin.command_line(), provider)
    emit({"id": provider.id, "changed": changed, "fetched_at": provider.saml_metadata_fetched_at})
