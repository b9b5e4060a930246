"""ids never reused on SQLite: AUTOINCREMENT for the tables whose ids name something outside the database

Revision ID: e5c1a9d7b3f2
Revises: c5e1a9d3f7b2
Create Date: 2026-12-02 08:20:00.000000

A SQLite table without AUTOINCREMENT gives a new row the id after the largest one, so once
the newest user is deleted the next user gets that id again: the ``sub`` of ID tokens, JWT
access tokens and UserInfo, the SCIM and admin API ids and the audit trail's targets would
name another person to whoever kept the old one. These tables are rebuilt with AUTOINCREMENT
(SQLite cannot add it to a table in place); their rows, indexes and constraints are copied
as they are. The app never turns SQLite's foreign keys on, so dropping a table that others
refer to during the rebuild neither fails nor cascades (checked below: with them on, the
upgrade stops before it changes anything). PostgreSQL's sequences never hand out an id
twice: nothing to do there.
"""
from alembic import op


# revision identifiers, used by Alembic.
revision = 'e5c1a9d7b3f2'
down_revision = 'c5e1a9d3f7b2'
branch_labels = None
depends_on = None

# The models that declare authsvc.core.database.IDS_NEVER_REUSED.
TABLES = ['domain', 'application', 'user', 'token', 'scim_group', 'mfa_factor', 'audit_record']


def _rebuild(autoincrement):
    bind = op.get_bind()
    if bind.dialect.name != 'sqlite':
        return
    if bind.exec_driver_sql('PRAGMA foreign_keys').scalar():
        raise RuntimeError('SQLite foreign keys are on: rebuilding a table would cascade; turn them off to upgrade')
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate='always', table_kwargs={'sqlite_autoincrement': autoincrement}
        ):
            pass


def upgrade():
    _rebuild(True)


def downgrade():
    _rebuild(False)
