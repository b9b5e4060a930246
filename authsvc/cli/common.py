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


@contextmanager
def admin_rules(options: dict[str, str | None] | None = None, hints: dict[str, str] | None = None) -> Iterator[None]:
    """Run admin verbs; their refusals become ``Error: --option: why`` on stderr and a non-zero exit.

    ``options`` names the option of each admin field whose name differs
    (``redirect_uris`` -> ``--redirect-uri``; None for an argument, shown bare);
    ``hints`` adds what to do to a field's message.
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
    except admin.Conflict as exc:
        raise click.ClickException(str(exc)) from None
    except admin.NotFound:
        raise click.ClickException("no such record") from None
    except admin.Forbidden:
        raise click.ClickException("the admin rules refuse this change") from None


RESERVED_SCOPES_HELP = (
    'Among the domain\'s, or reserved: "admin" (the admin API), "resource_token" (provider tokens), '
    '"scim" (SCIM provisioning; a domain admin\'s key).'
)

# A lifetime in seconds; 0 on `apps update` means "back to the global setting".
TTL = click.IntRange(min=0, max=10 * 365 * 24 * 3600)
