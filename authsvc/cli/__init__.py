"""``flask --app app ...`` commands: one JSON object on stdout each (docs/platform.md#command-line).

Each command group's module is imported when that group runs (Click's "lazily loading subcommands"):
``flask --app app users list`` loads authsvc/cli/users.py and no other group's module. ``flask --help``
still lists every group with its help, and loads them all to do so.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial
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


def _group(name: str, parent: click.Context | None) -> click.Command:
    """``load(name)`` as ``_Lazy`` calls it: a group of ours needs nothing of the command line it runs in."""
    return load(name)


class _Lazy(click.Group):
    """Stands for a command until it runs: then ``load`` gives the command itself, which runs.

    A group, so that Click hands it its arguments unparsed (``make_context``). Its help is its own when
    given (``db``: listing it must not load Flask-Migrate), else the command's, loaded to list it.
    """

    def __init__(self, name: str, load: Callable[[click.Context | None], click.Command], **attrs: Any) -> None:
        super().__init__(name, **attrs)
        self.load = load

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        return self.load(parent).make_context(info_name, args, parent, **extra)

    def get_short_help_str(self, limit: int = 45) -> str:
        if self.help is not None:
            return super().get_short_help_str(limit)
        return self.load(None).get_short_help_str(limit)


def init_app(app: Flask) -> None:
    for name in COMMANDS:
        app.cli.add_command(_Lazy(name, partial(_group, name)))
    app.cli.add_command(_Lazy("db", migrations.commands, help="Perform database migrations (Flask-Migrate)."))
