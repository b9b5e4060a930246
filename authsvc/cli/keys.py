"""``keys``: the domain's signing keys (ID tokens, logout tokens)."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from authsvc.cli.common import domain_by_host, emit
from authsvc.oauth import keys as signing_keys

keys = AppGroup("keys", help="A domain's signing keys, published at /auth/oauth/jwks.")


@keys.command("rotate")
@click.option("--domain", "host", required=True)
@click.option(
    "--alg", type=click.Choice(signing_keys.ALGORITHMS), default=signing_keys.DEFAULT_ALGORITHM, show_default=True
)
def rotate_key(host: str, alg: str) -> None:
    """Make a new current key; the previous one stays in the JWKS until the tokens it signed expire."""
    row = signing_keys.rotate(domain_by_host(host), alg, actor="cli")
    emit({"kid": row.kid, "alg": row.alg})


@keys.command("list")
@click.option("--domain", "host", required=True)
def list_keys(host: str) -> None:
    """The domain's keys, newest first: current, previous (still published) or expired."""
    emit({"keys": signing_keys.key_states(domain_by_host(host))})
