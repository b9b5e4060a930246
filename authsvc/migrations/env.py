"""Alembic environment, run through Flask-Migrate (``flask --app app db ...``)."""

import logging

from alembic import context
from flask import current_app

from authsvc.core.database import UNBOUNDED

log = logging.getLogger("alembic.env")
# One line for the whole upgrade (run_migrations_online) instead of Alembic's line per migration.
logging.getLogger("alembic.runtime.migration").setLevel(logging.WARNING)

config = context.config
db = current_app.extensions["migrate"].db
config.set_main_option("sqlalchemy.url", db.engine.url.render_as_string(hide_password=False).replace("%", "%%"))


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=db.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    def process_revision_directives(context, revision, directives) -> None:  # noqa: ANN001
        # An autogenerate run that finds no change writes no empty revision.
        if getattr(config.cmd_opts, "autogenerate", False) and directives[0].upgrade_ops.is_empty():
            directives[:] = []
            log.info("No changes in schema detected.")

    applied: list[str] = []

    def note_applied(*, step, **_: object) -> None:  # noqa: ANN001 - Alembic's MigrationInfo
        applied.append(step.up_revision_id)

    conf_args = dict(current_app.extensions["migrate"].configure_args)
    conf_args.setdefault("process_revision_directives", process_revision_directives)
    conf_args.setdefault("on_version_apply", note_applied)
    # A migration may take long (an index on a large table): neither the
    # service's statement timeout nor its client deadline applies to it.
    with db.engine.connect().execution_options(**{UNBOUNDED: True}) as connection:
        context.configure(connection=connection, target_metadata=db.metadata, **conf_args)
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                connection.exec_driver_sql("SET LOCAL statement_timeout = 0")
            context.run_migrations()
    summary = logging.getLogger("authsvc.migrations")
    if applied:
        summary.info("database: %d migrations applied, now at %s", len(applied), applied[-1])
    elif context.get_context().opts.get("destination_rev") in ("head", "heads"):  # an upgrade, not `db current`
        summary.info("database: up to date")


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
