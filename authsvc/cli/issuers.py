"""``issuers``: the issuers a domain trusts (token exchange, ID-JAGs) and the audiences it issues ID-JAGs for.

Also the ``--token-exchange`` options of ``apps create`` and ``apps update``. docs/token-exchange.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from flask.cli import AppGroup

from authsvc.admin import issuers as admin_issuers
from authsvc.admin.actors import command_line
from authsvc.cli.common import admin_rules, domain_by_host, emit

issuers = AppGroup("issuers", help="Other issuers: whose tokens the domain trusts, whom it issues ID-JAGs for.")


@issuers.command("trust")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--issuer", required=True, help="The issuer's identifier, its tokens' iss (compared exactly).")
@click.option("--jwks-uri", required=True, help="Where its signing keys are (https; a public address).")
@click.option("--subject-tokens", is_flag=True, help="Accept its JWTs as subject and actor tokens (RFC 8693).")
@click.option("--id-jag", is_flag=True, help="Accept its ID-JAGs at the JWT bearer grant (RFC 7523).")
@click.option(
    "--create-users",
    is_flag=True,
    help="With --id-jag: an ID-JAG whose email no user has creates that user (else it is refused).",
)
def trust(host: str, issuer: str, jwks_uri: str, subject_tokens: bool, id_jag: bool, create_users: bool) -> None:
    """Trust an issuer's tokens (added, or changed when the domain has it already)."""
    if not (subject_tokens or id_jag):
        raise click.UsageError("say what to accept: --subject-tokens, --id-jag or both")
    if create_users and not id_jag:
        raise click.UsageError("--create-users needs --id-jag")
    data = {
        "issuer": issuer,
        "jwks_uri": jwks_uri,
        "subject_tokens": subject_tokens,
        "id_jag": id_jag,
        "create_users": create_users,
    }
    rules = {"jwks_uri": "--jwks-uri", "id_jag": "--id-jag", "subject_tokens": "--subject-tokens"}
    with admin_rules({**rules, "create_users": "--create-users"}):
        row = admin_issuers.put(command_line(), domain_by_host(host), data)
    emit({"id": str(row.id)})


@issuers.command("audience")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--issuer", required=True, help="The resource authorisation server's issuer identifier.")
@click.option(
    "--client",
    "clients",
    multiple=True,
    metavar="OURS=THEIRS",
    help="An application's client_id there (the ID-JAG's client_id); unnamed ones are known by ours. Repeatable.",
)
def audience(host: str, issuer: str, clients: tuple[str, ...]) -> None:
    """Issue ID-JAGs for this resource authorisation server (the domain as an enterprise's IdP)."""
    data: dict[str, Any] = {"issuer": issuer, "id_jag_audience": True}
    if clients:
        if not all("=" in pair for pair in clients):
            raise click.BadParameter("each is OURS=THEIRS", param_hint="--client")
        data["client_ids"] = dict(pair.split("=", 1) for pair in clients)
    with admin_rules({"client_ids": "--client"}):
        row = admin_issuers.put(command_line(), domain_by_host(host), data)
    emit({"id": str(row.id)})


@issuers.command("list")
@click.option("--domain", "host", required=True, help="The domain's host.")
def list_issuers(host: str) -> None:
    """The domain's trusted issuers and ID-JAG audiences."""
    emit({"issuers": [row.as_json() for row in admin_issuers.listing(command_line(), domain_by_host(host))]})


def token_exchange_options(update: bool) -> Callable[[Any], Any]:
    """The ``--token-exchange`` options of ``apps create`` (flags) and ``apps update`` (on/off, left as is unset)."""

    def add(command: Any) -> Any:
        for option in reversed(
            [
                click.option(
                    "--token-exchange/--no-token-exchange",
                    "token_exchange",
                    default=None,
                    help="May exchange tokens (RFC 8693), within its scopes and resources.",
                )
                if update
                else click.option(
                    "--token-exchange",
                    "token_exchange",
                    is_flag=True,
                    help="May exchange tokens (RFC 8693), within its scopes and resources.",
                ),
                click.option(
                    "--token-exchange-impersonation",
                    is_flag=True,
                    help="With --token-exchange: a token without an actor token is issued without act.",
                ),
                click.option(
                    "--token-exchange-refresh-tokens",
                    is_flag=True,
                    help="With --token-exchange: an exchanged token comes with a refresh token.",
                ),
            ]
        ):
            command = option(command)
        return command

    return add


def token_exchange_policy(enabled: bool | None, impersonation: bool, refresh_tokens: bool) -> dict[str, Any]:
    """The admin field ``token_exchange`` the options give ({} when they leave it as it is)."""
    if (impersonation or refresh_tokens) and not enabled:
        raise click.UsageError(
            "--token-exchange-impersonation and --token-exchange-refresh-tokens need --token-exchange"
        )
    if enabled is None:
        return {}
    return {"token_exchange": {"impersonation": impersonation, "refresh_tokens": refresh_tokens} if enabled else None}
