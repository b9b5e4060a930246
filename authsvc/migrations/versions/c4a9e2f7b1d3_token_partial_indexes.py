"""token: the refresh digest's unique index and the user index hold only rows that have one

Revision ID: c4a9e2f7b1d3
Revises: b7e3d1f9a2c5
Create Date: 2026-12-02 23:10:00.000000

A token without a refresh token (client credentials, token exchange, a code
exchange of a client without the refresh grant) or without a user (client
credentials of an application with no service account) added a NULL entry to
the index of that column: a write-ahead log record and an index tuple on every
such grant that no reader ever finds, since every reader asks for a value
(``refresh_token_digest = :digest``, ``user_id = :id``, the foreign key's own
check on a user's delete), which PostgreSQL and SQLite both answer from a
partial index ``WHERE column IS NOT NULL``. NULLs never conflicted in the
unique one, so the rule it keeps is the same (bench/README.md, "Client
credentials: where a request's work goes"). On PostgreSQL the new indexes are
built CONCURRENTLY, so the token table takes writes meanwhile.
"""
from alembic import op
import sqlalchemy as sa

# Batch rebuilds on SQLite keep AUTOINCREMENT: ids are never reused (docs/security.md).
IDS_NEVER_REUSED = {'sqlite_autoincrement': True}
# SQLite's unique constraint from the initial schema has no name; batch mode names it so it can be dropped.
SQLITE_NAMES = {'uq': 'uq_%(table_name)s_%(column_0_name)s'}

# revision identifiers, used by Alembic.
revision = 'c4a9e2f7b1d3'
down_revision = 'b7e3d1f9a2c5'
branch_labels = None
depends_on = None

REFRESH, USER = 'ix_token_refresh_token_digest', 'ix_token_user_id'
HAS_REFRESH = sa.text('refresh_token_digest IS NOT NULL')
HAS_USER = sa.text('user_id IS NOT NULL')


def upgrade():
    if op.get_bind().dialect.name == 'postgresql':
        with op.get_context().autocommit_block():
            op.create_index(
                REFRESH, 'token', ['refresh_token_digest'], unique=True,
                postgresql_where=HAS_REFRESH, postgresql_concurrently=True,
            )
            op.create_index(
                'ix_token_user_id_partial', 'token', ['user_id'],
                postgresql_where=HAS_USER, postgresql_concurrently=True,
            )
        op.drop_constraint('token_refresh_token_digest_key', 'token', type_='unique')
        op.drop_index(USER, table_name='token')
        op.execute(f'ALTER INDEX ix_token_user_id_partial RENAME TO {USER}')
        return
    with op.batch_alter_table(
        'token', naming_convention=SQLITE_NAMES, recreate='always', table_kwargs=IDS_NEVER_REUSED
    ) as batch_op:
        batch_op.drop_constraint('uq_token_refresh_token_digest', type_='unique')
        batch_op.drop_index(USER)
    op.create_index(REFRESH, 'token', ['refresh_token_digest'], unique=True, sqlite_where=HAS_REFRESH)
    op.create_index(USER, 'token', ['user_id'], sqlite_where=HAS_USER)


def downgrade():
    op.drop_index(USER, table_name='token')
    op.drop_index(REFRESH, table_name='token')
    op.create_index(USER, 'token', ['user_id'])
    if op.get_bind().dialect.name == 'postgresql':
        op.create_unique_constraint('token_refresh_token_digest_key', 'token', ['refresh_token_digest'])
        return
    with op.batch_alter_table(
        'token', naming_convention=SQLITE_NAMES, recreate='always', table_kwargs=IDS_NEVER_REUSED
    ) as batch_op:
        batch_op.create_unique_constraint('uq_token_refresh_token_digest', ['refresh_token_digest'])
