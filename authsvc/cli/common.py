"""What the commands share: JSON output, lookups that fail clearly, admin outcomes as clear errors.

The commands write through the admin verbs (``authsvc.admin``) as the
command-line actor: the admin rules apply and every change is audited as ``cli``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click
from sqlalchemy import select

from authsvc import admin
from authsvc.auth import signin
from authsvc.core import errors
from authsvc.core.database import db
from authsvc.core.models import Application, Domain, User


def emit(data: Mapping[str, Any]) -> None:
    click.echo(json.dumps(data))


def domain_by_host(host: str) -> Domain:
    domain = db.session.scalar(select(Domain).where(Domain.host == host.lower()))
    if domain is None:
        raise click.ClickException(f"no domain with host {host!r}")
    return domain


def user_by_email(host: str, email: str) -> User:
    domain = domain_by_host(host)
    user = signin.find_user(domain, email)
    if user is None:
        raise click.ClickException(f"no user with e-mail {email!r} in {domain.host}")
    return user


def application_by_client_id(client_id: str) -> Application:
    application = db.session.scalar(select(Application).where(Application.client_id == client_id))
    if application is None:
        raise click.ClickException(f"no application with client_id {client_id!r}")
    return application


def record_named(model: type, record_id: str, what: str) -> Any:
    """The record of ``model`` an argument names by id, else ``no <what> with id '<id>'``.

    A lookup of what the command was given, as ``domain_by_host``: the message names it.
    """
    try:
        return admin.get(admin.command_line(), model, record_id)
    except admin.NotFound:
        raise click.ClickException(f"no {what} with id {record_id!r}") from None


@contextmanager
def admin_rules(options: dict[str, str | None] | None = None, hints: dict[str, str] | None = None) -> Iterator[None]:
    """Run admin verbs; their refusals become ``Error: ...`` on stderr and a non-zero exit.

    A field's error is ``--option: why``; any other refusal says the text of the one error table
    (authsvc.core.errors.ANSWERS), as the admin API and the console do. ``options`` names the
    option of each admin field whose name differs (``redirect_uris`` -> ``--redirect-uri``; None
    for an argument, shown bare); ``hints`` adds what to do to a field's message.
    """
    try:
        yield
    except admin.ValidationFailed as exc:
        problems = []
        for field, why in exc.fields.items():
            option = (options or {}).get(field, "--" + field.replace("_", "-"))
            hint = (hints or {}).get(field)
            problems.append((f"{option}: " if option else "") + why + (f" ({hint})" if hint else ""))
        raise click.ClickException("; ".join(problems)) from None
    except (admin.Conflict, admin.NotFound, admin.Forbidden) as exc:
        raise click.ClickException(errors.answer(exc).description) from None


RESERVED_SCOPES_HELP = (
    'Among the domain\'s, or reserved: "admin" (the admin API), "resource_token" (provider tokens), '
    '"scim" (SCIM provisioning; a domain admin\'s key), "ssf" (a Shared Signals receiver).'
)

# A lifetime in seconds; 0 on `apps update` means "back to the global setting".
TTL = click.IntRange(min=0, max=10 * 365 * 24 * 3600)


# Options of `apps create` and `apps update`.
INTROSPECT_HELP = (
    "A resource server: may introspect other applications' tokens (RFC 7662); confidential applications only."
)
DPOP_HELP = "Require DPoP (RFC 9449) for every token request: its tokens are bound to the client's key."
ACCESS_TOKEN_FORMAT = click.Choice(["opaque", "jwt"])
ACCESS_TOKEN_FORMAT_HELP = "opaque (default) or jwt: RFC 9068 access tokens signed with the domain's key."
RESOURCE_HELP = "A resource its tokens may be for (RFC 8707 'resource'; an absolute URI); repeat the option."

# Options of `domains create` and `domains update`.
PROFILE_HELP = (
    "fapi2: the FAPI 2.0 Security Profile for every application of the domain (docs/fapi.md); "
    "standard: the service's usual rules."
)
SIGNUP_HELP = (
    "Who may create an account at /auth/signup: off (default), open (anyone), restricted (addresses at the "
    "--signup-email-domain domains); docs/account.md#sign-up."
)
# The domain fields whose options are named otherwise.
DOMAIN_OPTIONS: dict[str, str | None] = {
    "signup_email_domains": "--signup-email-domain",
    "client_metadata_hosts": "--client-metadata-host",
}
