"""``apps``: a domain's client applications."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc import admin
from authsvc.admin import consent_texts
from authsvc.cli.branding import read_logo
from authsvc.cli.common import (
    ACCESS_TOKEN_FORMAT,
    ACCESS_TOKEN_FORMAT_HELP,
    DPOP_HELP,
    INTROSPECT_HELP,
    RESERVED_SCOPES_HELP,
    RESOURCE_HELP,
    TTL,
    admin_rules,
    application_by_client_id,
    domain_by_host,
    emit,
    user_by_email,
)
from authsvc.cli.issuers import token_exchange_options, token_exchange_policy
from authsvc.core.database import db
from authsvc.core.models import (
    Application,
)
from authsvc.oauth import client_authentication

apps = AppGroup("apps", help="Client applications of a domain.")

# The admin fields whose options are named otherwise.
APP_OPTIONS: dict[str, str | None] = {
    "redirect_uris": "--redirect-uri",
    "id_token_signed_response_alg": "--id-token-alg",
    "post_logout_redirect_uris": "--post-logout-redirect-uri",
    "jwks": "--jwks-file",
    "dpop_bound_access_tokens": "--dpop",
    "require_pushed_authorization_requests": "--require-par",
    "resources": "--resource",
    "token_exchange": "--token-exchange",
}


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
@click.option(
    "--require-par/--no-require-par",
    "require_par",
    default=None,
    help="Its authorisation requests must be pushed first (PAR, RFC 9126: require_pushed_authorization_requests).",
)
@click.option("--introspect", is_flag=True, help=INTROSPECT_HELP)
@click.option("--dpop/--no-dpop", default=None, help=DPOP_HELP)
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
    "--post-logout-redirect-uri",
    "post_logout_redirect_uris",
    multiple=True,
    help="Where RP-initiated logout may send the user back (OpenID Connect); matched exactly.",
)
@click.option(
    "--backchannel-logout-uri",
    help="Receives a Logout Token by POST when a session it signed in through ends (https; http on loopback only).",
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
@click.option("--access-token-format", type=ACCESS_TOKEN_FORMAT, help=ACCESS_TOKEN_FORMAT_HELP)
@click.option("--resource", "resources", multiple=True, help=RESOURCE_HELP)
@token_exchange_options(update=False)
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
    require_par: bool | None,
    introspect: bool,
    dpop: bool | None,
    access_token_ttl: int | None,
    refresh_token_ttl: int | None,
    id_token_alg: str | None,
    post_logout_redirect_uris: tuple[str, ...],
    backchannel_logout_uri: str | None,
    jwks_uri: str | None,
    jwks_file: TextIO | None,
    access_token_format: str | None,
    resources: tuple[str, ...],
    token_exchange: bool,
    token_exchange_impersonation: bool,
    token_exchange_refresh_tokens: bool,
) -> None:
    domain = domain_by_host(host)
    jwks = _read_jwks(jwks_file)
    keyed = jwks is not None or jwks_uri is not None
    data: dict[str, Any] = {
        "domain": str(domain.id),
        "name": name,
        "redirect_uris": list(redirect_uris),
        "scopes": scopes,
        # Left out unless given: registered keys make the application confidential without a secret.
        "confidential": confidential or None,
        "consent": consent,
        "require_pkce": require_pkce,
        "allow_plain_pkce": allow_plain_pkce,
        "device": device,
        "require_pushed_authorization_requests": require_par,
        "introspect": introspect or None,
        "dpop_bound_access_tokens": dpop,
        "access_token_ttl": access_token_ttl,
        "refresh_token_ttl": refresh_token_ttl,
        "id_token_signed_response_alg": id_token_alg,
        "post_logout_redirect_uris": list(post_logout_redirect_uris) or None,
        "backchannel_logout_uri": backchannel_logout_uri,
        "jwks": jwks,
        "jwks_uri": jwks_uri,
        "access_token_format": access_token_format,
        "resources": list(resources) or None,
        **token_exchange_policy(token_exchange or None, token_exchange_impersonation, token_exchange_refresh_tokens),
    }
    # How the options go together is the command line's to say, in its own words.
    if service_account_email is not None:
        if not (confidential or keyed):
            raise click.UsageError("--service-account needs --confidential (or --jwks-uri / --jwks-file)")
        # The option takes an e-mail; the admin field, the account's id.
        service_account = user_by_email(host, service_account_email)
        if not service_account.service_account:
            raise click.ClickException(f"{service_account_email!r} is not a service account")
        data["service_account"] = str(service_account.id)
    elif not redirect_uris:
        raise click.UsageError("--redirect-uri is required (unless --service-account is given)")
    with admin_rules(APP_OPTIONS):
        # Unset options (None) are left out: the admin defaults apply, as for an API request without them.
        application, secret = admin.create_application(
            admin.command_line(), {k: v for k, v in data.items() if v is not None}
        )
    out = {"id": str(application.id), "client_id": application.client_id}
    if secret:
        out["client_secret"] = secret
    emit(out)


def _read_jwks(jwks_file: TextIO | None) -> Any:
    """The JSON document of --jwks-file (checked as a JWKS by the admin rules), or None."""
    if jwks_file is None:
        return None
    text = jwks_file.read(client_authentication.JWKS_MAX_BYTES + 1)
    if len(text) > client_authentication.JWKS_MAX_BYTES:
        raise click.BadParameter(f"larger than {client_authentication.JWKS_MAX_BYTES} bytes", param_hint="--jwks-file")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise click.BadParameter("not a JSON document", param_hint="--jwks-file") from None


@apps.command("update")
@click.option("--client-id", required=True)
@click.option("--name")
@click.option("--scopes", help="The application's whole scope list, among the domain's and the reserved ones.")
@click.option("--access-token-ttl", type=TTL, help="Seconds; 0 means AUTHSVC_ACCESS_TOKEN_TTL.")
@click.option("--refresh-token-ttl", type=TTL, help="Seconds; 0 means AUTHSVC_REFRESH_TOKEN_TTL.")
@click.option("--id-token-alg", type=click.Choice(["RS256", "ES256"]), help="How its ID tokens are signed.")
@click.option(
    "--post-logout-redirect-uri",
    "post_logout_redirect_uris",
    multiple=True,
    help="The whole list of post-logout redirect URIs (repeat the option).",
)
@click.option("--no-post-logout-redirect-uris", is_flag=True, help="Remove every post-logout redirect URI.")
@click.option("--backchannel-logout-uri", help='The back-channel logout URI; "" removes it.')
@click.option("--introspect/--no-introspect", default=None, help=INTROSPECT_HELP)
@click.option("--dpop/--no-dpop", default=None, help=DPOP_HELP)
@click.option(
    "--require-par/--no-require-par",
    "require_par",
    default=None,
    help="Its authorisation requests must be pushed first (PAR, RFC 9126: require_pushed_authorization_requests).",
)
@click.option("--access-token-format", type=ACCESS_TOKEN_FORMAT, help=ACCESS_TOKEN_FORMAT_HELP)
@click.option("--resource", "resources", multiple=True, help="The whole list of resources (RFC 8707); repeat it.")
@click.option("--no-resources", is_flag=True, help="Remove every resource: its tokens are for the domain only.")
@click.option(
    "--logo",
    "logo_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="PNG, JPEG or WebP: on its consent page.",
)
@click.option("--no-logo", is_flag=True, help="Remove the logo an admin set.")
@token_exchange_options(update=True)
def update_app(
    client_id: str,
    name: str | None,
    scopes: str | None,
    access_token_ttl: int | None,
    refresh_token_ttl: int | None,
    id_token_alg: str | None,
    post_logout_redirect_uris: tuple[str, ...],
    no_post_logout_redirect_uris: bool,
    backchannel_logout_uri: str | None,
    introspect: bool | None,
    dpop: bool | None,
    require_par: bool | None,
    access_token_format: str | None,
    resources: tuple[str, ...],
    no_resources: bool,
    logo_path: Path | None,
    no_logo: bool,
    token_exchange: bool | None,
    token_exchange_impersonation: bool,
    token_exchange_refresh_tokens: bool,
) -> None:
    """Change an application; lifetimes apply to tokens issued from now on."""
    application = application_by_client_id(client_id)
    data = {
        "name": name,
        "scopes": scopes,
        "access_token_ttl": access_token_ttl,
        "refresh_token_ttl": refresh_token_ttl,
        "id_token_signed_response_alg": id_token_alg,
        "post_logout_redirect_uris": list(post_logout_redirect_uris) or None,
        "backchannel_logout_uri": backchannel_logout_uri or None,
        "introspect": introspect,
        "dpop_bound_access_tokens": dpop,
        "require_pushed_authorization_requests": require_par,
        "access_token_format": access_token_format,
        "resources": list(resources) or None,
    }
    changes: dict[str, Any] = {k: v for k, v in data.items() if v is not None}
    # An explicit null resets a setting (the admin API's rule).
    if no_post_logout_redirect_uris:
        changes["post_logout_redirect_uris"] = None
    if backchannel_logout_uri == "":
        changes["backchannel_logout_uri"] = None
    if no_resources:
        changes["resources"] = None
    upload = read_logo(logo_path) if logo_path is not None else None
    actor = admin.command_line()
    changes |= token_exchange_policy(token_exchange, token_exchange_impersonation, token_exchange_refresh_tokens)
    with admin_rules(APP_OPTIONS):
        if changes or (upload is None and not no_logo):
            admin.update_application(actor, application, changes)
        if upload is not None:
            consent_texts.set_application_logo(actor, application, upload)
        elif no_logo:
            consent_texts.remove_application_logo(actor, application)
    emit(application.as_json() | {"logo": consent_texts.application_logo(actor, application)})


@apps.command("list")
@click.option("--domain", "host", help="Only this domain's applications.")
def list_apps(host: str | None) -> None:
    query = select(Application).order_by(Application.id)
    if host:
        query = query.where(Application.domain_id == domain_by_host(host).id)
    emit({"apps": [a.as_json() for a in db.session.scalars(query)]})
