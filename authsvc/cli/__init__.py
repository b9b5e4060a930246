"""``flask --app app ...`` commands: one JSON object on stdout each (docs/platform.md#command-line).

Each command group's module is imported when that group runs (Click's "lazily loading subcommands"):
``flask --app app users list`` loads authsvc/cli/users.py and no other group's module. ``flask --help``
still lists every group with its help, and loads them all to do so.
"""

from __future__ import annotations

import importlib
from typing import Any, cast

import click
from flask import Flask

from authsvc.cli import migrations

# The command's name: (its module under authsvc.cli, the attribute that holds it).
COMMANDS = {
    "domains": ("tenants", "domains"),
    "apps": ("applications", "apps"),
    "users": ("users", "users"),
    "api-keys": ("users", "api_keys"),
    "tokens": ("tokens", "tokens"),
    "seed-demo": ("demo", "seed_demo"),
    "sso": ("sso", "sso"),
    "keys": ("keys", "keys"),
    "ldap": ("ldap", "ldap"),
    "mfa": ("mfa", "mfa"),
    "registration-tokens": ("registration", "registration_tokens"),
    "resources": ("resources", "resources"),
    "issuers": ("issuers", "issuers"),
    "webhooks": ("webhooks", "webhooks"),
}


def load(name: str) -> click.Command:
    """The command ``name`` itself, its module imported (once: Python keeps it)."""
    module, attribute = COMMANDS[name]
    command: click.Command = getattr(importlib.import_module(f"authsvc.cli.{module}"), attribute)
    if name == "domains":
        # Commands of the domains group that live with what they set (authsvc/cli/branding.py).
        from authsvc.cli.branding import brand, describe_scope
        from authsvc.cli.tenants import domain_scopes

        cast(click.Group, command).add_command(brand)
        domain_scopes.add_command(describe_scope)
    return command


class _Lazy(click.Group):
    """Stands for the command ``name`` until it runs: then its module is imported and the command itself runs.

    A group, so that Click hands it its arguments unparsed (``make_context``); its help is the command's own.
    """

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        assert self.name is not None
        return load(self.name).make_context(info_name, args, parent, **extra)

    def get_short_help_str(self, limit: int = 45) -> str:
        assert self.name is not None
        return load(self.name).get_short_help_str(limit)


def init_app(app: Flask) -> None:
    for name in COMMANDS:
        app.cli.add_command(_Lazy(name))
    migrations.init_app(app)
