"""``flask --app app db ...``: Flask-Migrate's commands over authsvc/migrations/, loaded when one runs.

Flask-Migrate brings Alembic, Mako and Pygments (about a tenth of building the app): every other
command, every web worker and every test that builds the app goes without them. To migrate
in-process (the tests' databases), ``install(app)`` and then call ``flask_migrate.upgrade()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from flask import Flask
from flask.cli import ScriptInfo

from authsvc.core.database import db

DIRECTORY = Path(__file__).resolve().parent.parent / "migrations"


def install(app: Flask) -> None:
    """Flask-Migrate on ``app`` (its ``db`` commands and what they read), once."""
    if "migrate" not in app.extensions:
        from flask_migrate import Migrate

        Migrate(app, db, directory=str(DIRECTORY), render_as_batch=True)


class _Commands(click.Group):
    """The ``db`` group: it stands for Flask-Migrate's, which it loads once asked to run (``--help`` too)."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        app = (parent or click.Context(self)).ensure_object(ScriptInfo).load_app()
        install(app)
        group = app.cli.commands["db"]  # Flask-Migrate's, put there by install
        return group.make_context(info_name, args, parent, **extra)


def init_app(app: Flask) -> None:
    app.cli.add_command(_Commands("db", help="Perform database migrations (Flask-Migrate)."))
