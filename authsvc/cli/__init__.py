"""``flask --app app ...`` commands: one JSON object on stdout each (docs/platform.md#command-line)."""

from __future__ import annotations

from flask import Flask

from authsvc.cli import migrations
from authsvc.cli.applications import apps
from authsvc.cli.branding import brand, describe_scope
from authsvc.cli.demo import seed_demo
from authsvc.cli.issuers import issuers
from authsvc.cli.keys import keys
from authsvc.cli.ldap import ldap
from authsvc.cli.mfa import mfa
from authsvc.cli.registration import registration_tokens
from authsvc.cli.resources import resources
from authsvc.cli.sso import sso
from authsvc.cli.tenants import domain_scopes, domains
from authsvc.cli.tokens import tokens
from authsvc.cli.users import api_keys, users
from authsvc.cli.webhooks import webhooks

domains.add_command(brand)
domain_scopes.add_command(describe_scope)


def init_app(app: Flask) -> None:
    commands = (
        domains,
        apps,
        users,
        api_keys,
        tokens,
        seed_demo,
        sso,
        keys,
        ldap,
        mfa,
        registration_tokens,
        resources,
        issuers,
        webhooks,
    )
    for command in commands:
        app.cli.add_command(command)
    migrations.init_app(app)
