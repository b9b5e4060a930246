"""``domains`` (and their scopes) and ``apps``: the tenants and their client applications."""

from __future__ import annotations

import json
from typing import Any, TextIO

import click
from flask.cli import AppGroup
from sqlalchemy import select

from authsvc import admin
from authsvc.cli.common import (
    RESERVED_SCOPES_HELP,
    TTL,
    admin_rules,
    application_by_client_id,
    domain_by_host,
    emit,
    user_by_email,
)
from authsvc.cli.issuers import token_exchange_options, token_exchange_policy
from authsvc.core.database import db
from authsvc.core.models import DEFAULT_DOMAIN_SCOPES, PROFILES, SIGNUP_MODES, STANDARD_PROFILE, Application, Domain
from authsvc.oauth import client_authentication

domains = AppGroup("domains", help="Domains (tenants), found by Host.")
domain_scopes = AppGroup("scopes", help="The scopes a domain knows; applications and keys pick among them.")
domains.add_command(domain_scopes)
apps = AppGroup("apps", help="Client applications of a domain.")

PROFILE_HELP = (
    "fapi2: the FAPI 2.0 Security Profile for every application of the domain (docs/fapi.md); "
    "standard: the service's usual rules."
)
SIGNUP_HELP = (
    "Who may create an account at /auth/signup: off (default), open (anyone), restricted (addresses at the "
    "--signup-email-domain domains); docs/account.md#sign-up."
)
INTROSPECT_HELP = (
    "A resource server: may introspect other applications' tokens (RFC 7662); confidential applications only."
)
DPOP_HELP = "Require DPoP (RFC 9449) for every token request: its tokens are bound to the client's key."

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

ACCESS_TOKEN_FORMAT = click.Choice(["opaque", "jwt"])
ACCESS_TOKEN_FORMAT_HELP = "opaque (default) or jwt: RFC 9068 access tokens signed with the domain's key."
RESOURCE_HELP = "A resource its tokens may be for (RFC 8707 'resource'; an absolute URI); repeat the option."


@domains.command("create")
@click.option("--name", required=True)
@click.option("--host", required=True, help="Host name requests for this domain carry.")
@click.option("--scopes", default=DEFAULT_DOMAIN_SCOPES, show_default=True, help="Scopes known to the domain.")
@click.option("--profile", type=click.Choice(PROFILES), default=STANDARD_PROFILE, show_default=True, help=PROFILE_HELP)
def create_domain(name: str, host: str, scopes: str, profile: str) -> None:
    with admin_rules():
        domain = admin.create_domain(
            admin.command_line(), {"name": name, "host": host, "scopes": scopes, "profile": profile}
        )
    # The fields of the command line's contract (docs/cli.md); `domains list` shows the profile.
    emit({"id": str(domain.id), "name": domain.name, "host": domain.host})


@domains.command("update")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--name")
@click.option("--profile", type=click.Choice(PROFILES), help=PROFILE_HELP)
@click.option("--signup", type=click.Choice(SIGNUP_MODES), help=SIGNUP_HELP)
@click.option(
    "--signup-email-domain",
    "signup_email_domains",
    multiple=True,
    help="An e-mail domain whose addresses may sign up under --signup restricted; repeat the option. "
    "Given, the list replaces the domain's.",
)
@click.option(
    "--new-device-notice",
    type=click.Choice(["on", "off"]),
    help="Mail a notice when a user signs in from a browser not seen before for them (default on).",
)
def update_domain(
    host: str,
    name: str | None,
    profile: str | None,
    signup: str | None,
    signup_email_domains: tuple[str, ...],
    new_device_notice: str | None,
) -> None:
    """Change a domain; fapi2 needs every application of it to comply first."""
    domain = domain_by_host(host)
    notice = None if new_device_notice is None else new_device_notice == "on"
    given = {"name": name, "profile": profile, "signup": signup, "new_device_notice": notice}
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if signup_email_domains:
        changes["signup_email_domains"] = list(signup_email_domains)
    with admin_rules({"signup_email_domains": "--signup-email-domain"}):
        admin.update_domain(admin.command_line(), domain, changes)
    emit(domain.as_json())


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
    with admin_rules({"scopes": None}):
        admin.add_domain_scopes(admin.command_line(), domain, {"scopes": " ".join(names)})
    emit(_scopes_out(domain))


@domain_scopes.command("remove")
@click.option("--domain", "host", required=True)
@click.argument("names", nargs=-1, required=True)
def remove_domain_scopes(host: str, names: tuple[str, ...]) -> None:
    """Remove scopes that no application or live API key of the domain still has."""
    domain = domain_by_host(host)
    with admin_rules({"scopes": None}):
        admin.remove_domain_scopes(admin.command_line(), domain, {"scopes": " ".join(names)})
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
    changes |= token_exchange_policy(token_exchange, token_exchange_impersonation, token_exchange_refresh_tokens)
    with admin_rules(APP_OPTIONS):
        admin.update_application(admin.command_line(), application, changes)
    emit(application.as_json())


@apps.command("list")
@click.option("--domain", "host", help="Only this domain's applications.")
def list_apps(host: str | None) -> None:
    query = select(Application).order_by(Application.id)
    if host:
        query = query.where(Application.domain_id == domain_by_host(host).id)
    emit({"apps": [a.as_json() for a in db.session.scalars(query)]})
