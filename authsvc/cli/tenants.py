"""``domains`` (and their scopes) and ``apps``: the tenants and their client applications."""

from __future__ import annotations

import json
import secrets
from typing import Any, TextIO

import click
from flask import current_app
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc.cli.common import (
    RESERVED_SCOPES_HELP,
    TTL,
    application_by_client_id,
    commit_or_fail,
    domain_by_host,
    emit,
    user_by_email,
    validate_host,
    validate_redirect_uri,
    validate_scopes,
)
from authsvc.core import security, validation
from authsvc.core.database import db
from authsvc.core.models import DEFAULT_DOMAIN_SCOPES, ApiKey, Application, Domain

domains = AppGroup("domains", help="Domains (tenants), found by Host.")
domain_scopes = AppGroup("scopes", help="The scopes a domain knows; applications and keys pick among them.")
domains.add_command(domain_scopes)
apps = AppGroup("apps", help="Client applications of a domain.")


@domains.command("create")
@click.option("--name", required=True)
@click.option("--host", required=True, help="Host name requests for this domain carry.")
@click.option("--scopes", default=DEFAULT_DOMAIN_SCOPES, show_default=True, help="Scopes known to the domain.")
def create_domain(name: str, host: str, scopes: str) -> None:
    domain = Domain(name=name, host=validate_host(host), scopes=validate_scopes(scopes))
    db.session.add(domain)
    commit_or_fail(f"a domain with host {domain.host!r}")
    emit({"id": str(domain.id), "name": domain.name, "host": domain.host})


@domains.command("list")
def list_domains() -> None:
    emit({"domains": [d.as_json() for d in db.session.scalars(select(Domain).order_by(Domain.id))]})


def _scopes_out(domain: Domain) -> dict[str, Any]:
    return {"id": str(domain.id), "host": domain.host, "scopes": domain.scope_list}


@domain_scopes.command("list")
@click.option("--domain", "host", required=True)
def list_domain_scopes(host: str) -> None:
    """List a domain's scopes."""
    emit(_scopes_out(domain_by_host(host)))


@domain_scopes.command("add")
@click.option("--domain", "host", required=True)
@click.argument("names", nargs=-1, required=True)
def add_domain_scopes(host: str, names: tuple[str, ...]) -> None:
    """Add scopes to a domain, such as PlaceOS resource scopes."""
    domain = domain_by_host(host)
    added = validate_scopes(" ".join(names)).split()
    domain.scopes = " ".join(dict.fromkeys(domain.scope_list + added))
    db.session.commit()
    emit(_scopes_out(domain))


@domain_scopes.command("remove")
@click.option("--domain", "host", required=True)
@click.argument("names", nargs=-1, required=True)
def remove_domain_scopes(host: str, names: tuple[str, ...]) -> None:
    """Remove scopes that no application or live API key of the domain still has."""
    domain = domain_by_host(host)
    removed = set(names)
    if "public" in removed:
        raise click.ClickException("'public' is the scope of every request that names none; it stays")
    unknown = removed - set(domain.scope_list)
    if unknown:
        raise click.ClickException(f"the domain has no scope {' '.join(sorted(unknown))}")
    in_use = [
        f"application {a.client_id}"
        for a in db.session.scalars(select(Application).where(Application.domain_id == domain.id))
        if removed & set(a.scope_list)
    ] + [
        f"API key {k.id}"
        for k in db.session.scalars(select(ApiKey).where(ApiKey.domain_id == domain.id, ApiKey.revoked_at.is_(None)))
        if removed & set(k.scopes.split())
    ]
    if in_use:
        raise click.ClickException(f"still in use by {', '.join(in_use)}; change those first")
    domain.scopes = " ".join(s for s in domain.scope_list if s not in removed)
    db.session.commit()
    emit(_scopes_out(domain))


@apps.command("create")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--name", required=True)
@click.option("--redirect-uri", "redirect_uris", multiple=True, help="Required unless --service-account is given.")
@click.option("--scopes", default="public", show_default=True, help=RESERVED_SCOPES_HELP)
@click.option("--confidential", is_flag=True, help="Issue a client secret; the client must authenticate.")
@click.option(
    "--service-account",
    "service_account_email",
    help="E-mail of a service account of the domain: client_credentials tokens act as it (needs --confidential).",
)
@click.option("--consent", is_flag=True, help="Ask the user before issuing a code.")
@click.option(
    "--require-pkce/--no-require-pkce",
    default=None,
    help="Refuse authorisation requests without an S256 code_challenge. Default: on for public applications; "
    "--no-require-pkce is the legacy mode for clients that send the spec's flow literally.",
)
@click.option("--allow-plain-pkce", is_flag=True, help="Accept code_challenge_method=plain (RFC 9700: avoid).")
@click.option("--device", is_flag=True, help="Allow the device authorisation grant (RFC 8628), for screens.")
@click.option("--access-token-ttl", type=TTL, help="Seconds; default AUTHSVC_ACCESS_TOKEN_TTL.")
@click.option(
    "--refresh-token-ttl", type=TTL, help="Seconds a grant may be refreshed; default AUTHSVC_REFRESH_TOKEN_TTL."
)
@click.option(
    "--id-token-alg",
    type=click.Choice(["RS256", "ES256"]),
    help="How its ID tokens are signed (OpenID Connect); default RS256.",
)
@click.option(
    "--jwks-uri",
    help="private_key_jwt (RFC 7523): where its public keys are served; a confidential application without secret.",
)
@click.option(
    "--jwks-file",
    type=click.File("r"),
    help="private_key_jwt (RFC 7523): a file holding its public keys (a JWKS); instead of --jwks-uri.",
)
def create_app_command(
    host: str,
    name: str,
    redirect_uris: tuple[str, ...],
    scopes: str,
    confidential: bool,
    service_account_email: str | None,
    consent: bool,
    require_pkce: bool | None,
    allow_plain_pkce: bool,
    device: bool,
    access_token_ttl: int | None,
    refresh_token_ttl: int | None,
    id_token_alg: str | None,
    jwks_uri: str | None,
    jwks_file: TextIO | None,
) -> None:
    domain = domain_by_host(host)
    keys = _client_keys(jwks_uri, jwks_file)
    service_account = None
    if service_account_email is not None:
        if not (confidential or keys):
            raise click.UsageError("--service-account needs --confidential (or --jwks-uri / --jwks-file)")
        service_account = user_by_email(host, service_account_email)
        if not service_account.service_account:
            raise click.ClickException(f"{service_account_email!r} is not a service account")
    elif not redirect_uris:
        raise click.UsageError("--redirect-uri is required (unless --service-account is given)")
    uris = list(dict.fromkeys(validate_redirect_uri(uri) for uri in redirect_uris))
    # Registered keys replace the secret: --confidential with them is redundant.
    secret = security.new_secret() if confidential and not keys else None
    application = Application(
        domain_id=domain.id,
        name=name,
        client_id=secrets.token_urlsafe(24),
        client_secret_digest=security.digest(secret) if secret else None,
        redirect_uris=uris,
        scopes=validate_scopes(scopes, domain.assignable_scopes),
        service_account_id=service_account.id if service_account else None,
        consent=consent,
        allow_plain_pkce=allow_plain_pkce,
        device=device,
        access_token_ttl=access_token_ttl or None,
        refresh_token_ttl=refresh_token_ttl or None,
        id_token_signed_response_alg=id_token_alg,
        **keys,
        # Unset, the model's default: required for a public application.
        **({} if require_pkce is None else {"require_pkce": require_pkce}),
    )
    db.session.add(application)
    commit_or_fail("that application")
    out = {"id": str(application.id), "client_id": application.client_id}
    if secret:
        out["client_secret"] = secret
    emit(out)


def _client_keys(jwks_uri: str | None, jwks_file: TextIO | None) -> dict[str, Any]:
    """The private_key_jwt fields from --jwks-uri or --jwks-file, checked as the admin API checks them."""
    if jwks_uri is None and jwks_file is None:
        return {}
    jwks = None
    if jwks_file is not None:
        text = jwks_file.read(validation.JWKS_MAX_BYTES + 1)
        if len(text) > validation.JWKS_MAX_BYTES:
            raise click.BadParameter(f"larger than {validation.JWKS_MAX_BYTES} bytes", param_hint="--jwks-file")
        try:
            jwks = json.loads(text)
        except (ValueError, RecursionError):
            raise click.BadParameter("not a JSON document", param_hint="--jwks-file") from None
    allow_private = current_app.config["AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS"]
    try:
        return validation.client_authentication(None, jwks, jwks_uri, allow_private=allow_private)
    except validation.Invalid as exc:
        raise click.UsageError(str(exc)) from None


@apps.command("update")
@click.option("--client-id", required=True)
@click.option("--name")
@click.option("--scopes", help="The application's whole scope list, among the domain's and the reserved ones.")
@click.option("--access-token-ttl", type=TTL, help="Seconds; 0 means AUTHSVC_ACCESS_TOKEN_TTL.")
@click.option("--refresh-token-ttl", type=TTL, help="Seconds; 0 means AUTHSVC_REFRESH_TOKEN_TTL.")
def update_app(
    client_id: str,
    name: str | None,
    scopes: str | None,
    access_token_ttl: int | None,
    refresh_token_ttl: int | None,
) -> None:
    """Change an application; lifetimes apply to tokens issued from now on."""
    application = application_by_client_id(client_id)
    if name is not None:
        application.name = name
    if scopes is not None:
        application.scopes = validate_scopes(scopes, application.domain.assignable_scopes)
    if access_token_ttl is not None:
        application.access_token_ttl = access_token_ttl or None
    if refresh_token_ttl is not None:
        application.refresh_token_ttl = refresh_token_ttl or None
    db.session.commit()
    emit(application.as_json())


@apps.command("list")
@click.option("--domain", "host", help="Only this domain's applications.")
def list_apps(host: str | None) -> None:
    query = select(Application).order_by(Application.id)
    if host:
        query = query.where(Application.domain_id == domain_by_host(host).id)
    emit({"apps": [a.as_json() for a in db.session.scalars(query)]})
