"""What the commands share: JSON output, lookups that fail clearly, input validation."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from authsvc.accounts import signin
from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.models import Application, Domain, User


def emit(data: dict[str, Any]) -> None:
    click.echo(json.dumps(data))


def domain_by_host(host: str) -> Domain:
    domain = db.session.scalar(select(Domain).where(Domain.host == host.lower()))
    if domain is None:
        raise click.ClickException(f"no domain with host {host!r}")
    return domain


def commit_or_fail(what: str) -> None:
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        raise click.ClickException(f"{what} already exists") from None


def _clear(rule: Callable[..., Any]) -> Callable[..., Any]:
    """A validation rule that fails as a clear CLI error."""

    def check(*args: Any, **kwargs: Any) -> Any:
        try:
            return rule(*args, **kwargs)
        except validation.Invalid as exc:
            raise click.ClickException(str(exc)) from None

    return check


validate_host = _clear(validation.host)
validate_scopes = _clear(validation.scopes)
validate_redirect_uri = _clear(validation.redirect_uri)
validate_backchannel_logout_uri = _clear(validation.backchannel_logout_uri)
validate_email = _clear(validation.email)
check_password = _clear(validation.password)


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


RESERVED_SCOPES_HELP = 'Among the domain\'s, or reserved: "admin" (the admin API), "resource_token" (provider tokens).'

# A lifetime in seconds; 0 on `apps update` means "back to the global setting".
TTL = click.IntRange(min=0, max=10 * 365 * 24 * 3600)
