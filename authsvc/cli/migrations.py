"""``flask --app app db ...``: Flask-Migrate's commands over authsvc/migrations/, loaded when one runs.

Flask-Migrate brings Alembic, Mako and Pygments (about a tenth of building the app): every other
command, every web worker and every test that builds the app goes without them. To migrate
in-process (the tests' databases), ``install(app)`` and then call ``flask_migrate.upgrade()``.
"""

from __future__ import annotations

from pathlib import Path

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


def commands(parent: click.Context | None) -> click.Command:
    """Flask-Migrate's ``db`` group, installed on the app that ``parent``'s command line loads (authsvc.cli's
    ``_Lazy`` calls this when ``flask --app app db ...`` runs)."""
    app = (parent or click.Context(click.Group())).ensure_object(ScriptInfo).load_app()
    install(app)
    return app.cli.commands["db"]  # Flask-Migrate's, put there by install
