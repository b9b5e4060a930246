"""``sso``: single sign-on providers of a domain (SPEC 4.3, 5.4)."""

from __future__ import annotations

import re
import secrets
from typing import Any

import click
from flask import current_app
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc.cli.common import commit_or_fail, domain_by_host, emit, validate_scopes
from authsvc.core import security, validation
from authsvc.core.audit import record as audit_record
from authsvc.core.database import db
from authsvc.core.models import Domain, SsoProvider
from authsvc.identity import providers, saml, saml_setup

sso = AppGroup("sso", help="Single sign-on providers of a domain.")


def _pairs(values: tuple[str, ...], what: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip():
            raise click.ClickException(f"{what} must look like NAME=VALUE, not {value!r}")
        pairs[key.strip()] = rest.strip()
    return pairs


def validate_provider_url(url: str | None, what: str, private_allowed: bool) -> str | None:
    try:
        url = validation.provider_url(url, what)
    except validation.Invalid as exc:
        raise click.ClickException(str(exc)) from None
    problem = validation.public_url_problem(url) if url and not private_allowed else None
    if problem:
        raise click.ClickException(f"{what} {url!r} {problem} (--allow-private-network for an on-premises provider)")
    return url.rstrip("/") if url and what == "--issuer" else url


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
def create_sso(
    host: str,
    name: str,
    protocol: str | None,
    client_id: str | None,
    client_secret: str | None,
    metadata_url: str | None,
    metadata_file: Any,
    email_attribute: str | None,
    name_attribute: str | None,
    groups_attribute: str | None,
    allow_unsolicited: bool,
    clock_skew: int,
    issuer: str | None,
    authorize_url: str | None,
    token_url: str | None,
    userinfo_url: str | None,
    jwks_url: str | None,
    scopes: str | None,
    preset: str | None,
    tenant: str | None,
    auth_method: str | None,
    params: tuple[str, ...],
    maps: tuple[str, ...],
    matches: tuple[str, ...],
    trust_email: bool,
    required: str | None,
    allow_private_network: bool,
) -> None:
    domain = domain_by_host(host)
    private_allowed = allow_private_network or current_app.config["AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS"]
    saml_options = (metadata_url, metadata_file, email_attribute, name_attribute, groups_attribute, allow_unsolicited)
    if protocol == "saml":
        metadata_url = validate_provider_url(metadata_url, "--metadata-url", private_allowed)
        attributes = {"email": email_attribute, "name": name_attribute, "groups": groups_attribute}
        xml = metadata_file.read(saml_setup.MAX_METADATA_BYTES + 1) if metadata_file else None
        _create_saml(domain, name, metadata_url, xml, attributes, allow_unsolicited, clock_skew, allow_private_network)
        return
    if any(saml_options):
        raise click.ClickException("--metadata-url, --metadata-file and the attribute options go with --protocol saml")
    if not client_id or not client_secret:
        raise click.ClickException("--client-id and --client-secret are needed (or --protocol saml)")
    fields: dict[str, Any] = {}
    if preset == "microsoft":
        if not tenant or not re.match(r"^[A-Za-z0-9.-]{1,100}$", tenant):
            raise click.ClickException("--preset microsoft needs --tenant (a tenant id or domain, or organizations)")
        fields = providers.microsoft_preset(tenant)
    elif tenant:
        raise click.ClickException("--tenant goes with --preset microsoft")
    elif issuer and protocol != "oauth2":
        fields = {"kind": "oidc"}
    elif authorize_url and token_url and userinfo_url and protocol != "oidc":
        fields = {"kind": "oauth2"}
    else:
        raise click.ClickException("give --issuer, or --authorize-url, --token-url and --userinfo-url, or a --preset")
    for key, value in (
        ("issuer", validate_provider_url(issuer, "--issuer", private_allowed)),
        ("authorize_url", validate_provider_url(authorize_url, "--authorize-url", private_allowed)),
        ("token_url", validate_provider_url(token_url, "--token-url", private_allowed)),
        ("userinfo_url", validate_provider_url(userinfo_url, "--userinfo-url", private_allowed)),
        ("jwks_url", validate_provider_url(jwks_url, "--jwks-url", private_allowed)),
        ("token_endpoint_auth_method", auth_method),
        ("required_scopes", required),
    ):
        if value:
            fields[key] = value
    if scopes:
        fields["scopes"] = validate_scopes(scopes)
    fields.setdefault("scopes", "openid email profile" if fields["kind"] == "oidc" else "email profile")
    mappings = {k: [c.strip() for c in v.split(",") if c.strip()] for k, v in _pairs(maps, "--map").items()}
    rules = {k: [c.strip() for c in v.split(",") if c.strip()] for k, v in _pairs(matches, "--match").items()}
    problem = providers.email_trust_problem(
        {**fields, "tenant": tenant, "trust_email": trust_email, "match_rules": rules}
    )
    if problem:
        raise click.ClickException(f"--trust-email: {problem} (--match tid=<tenant id>)")
    extra_params = _pairs(params, "--param")
    problem = providers.authorize_params_problem(extra_params)
    if problem:
        raise click.ClickException(f"--param: {problem}")
    provider = SsoProvider(
        id=secrets.token_hex(8),
        domain_id=domain.id,
        name=name,
        client_id=client_id,
        client_secret_encrypted=security.encrypt(client_secret),
        authorize_params=extra_params,
        match_rules=rules,
        trust_email=trust_email,
        allow_private_network=allow_private_network,
        **{**fields, "profile_mappings": {**fields.get("profile_mappings", {}), **mappings}},
    )
    db.session.add(provider)
    commit_or_fail("that SSO provider")
    out = {"id": provider.id, "callback_url": _callback_url(domain)}
    consent = providers.admin_consent_url(provider, out["callback_url"])
    if consent:
        out["admin_consent_url"] = consent
    emit(out)


def _create_saml(
    domain: Domain,
    name: str,
    metadata_url: str | None,
    metadata_xml: str | None,
    attributes: dict[str, str | None],
    allow_unsolicited: bool,
    clock_skew: int,
    allow_private_network: bool,
) -> None:
    if bool(metadata_url) == bool(metadata_xml):
        raise click.ClickException("--protocol saml needs --metadata-url or --metadata-file (one of them)")
    try:
        provider = saml_setup.new_provider(
            secrets.token_hex(8),
            domain.id,
            domain.host,
            name,
            metadata_xml=metadata_xml,
            metadata_url=metadata_url,
            attributes=attributes,
            allow_private_network=allow_private_network,
            allow_unsolicited=allow_unsolicited,
            clock_skew=clock_skew,
        )
    except saml.SamlError as exc:
        raise click.ClickException(exc.message) from None
    db.session.add(provider)
    audit_record(
        "sso.created",
        domain_id=domain.id,
        actor="cli",
        target=f"sso:{provider.id}",
        details={"after": provider.as_json()},
        commit=False,
    )
    commit_or_fail("that SSO provider")
    emit(_saml_urls(domain, provider))


def _saml_urls(domain: Domain, provider: SsoProvider) -> dict[str, str]:
    urls = saml.sp_urls(domain.host, provider.id)
    return {
        "id": provider.id,
        "callback_url": urls["acs_url"],
        "metadata_url": urls["metadata_url"],
        "entity_id": urls["entity_id"],
    }


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
    domain = db.session.get(Domain, provider.domain_id)
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
    if provider.kind != "saml":
        raise click.ClickException("only a SAML provider has IdP metadata")
    try:
        changed = saml_setup.refresh_metadata(provider, force=True)
    except saml.SamlError as exc:
        db.session.rollback()
        raise click.ClickException(exc.message) from None
    audit_record(
        "saml.metadata_refreshed",
        domain_id=provider.domain_id,
        actor="cli",
        target=f"sso:{provider.id}",
        details={"changed": changed},
        commit=False,
    )
    db.session.commit()
    emit({"id": provider.id, "changed": changed, "fetched_at": provider.saml_metadata_fetched_at})
