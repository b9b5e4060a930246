"""covering index on the access token digest

Revision ID: 8c41f0a7d2e5
Revises: 3a1d7d54d40e
Create Date: 2026-11-21 21:30:00.000000

The inspect lookup reads a token by its digest; on PostgreSQL the unique index
carries the columns that lookup needs (INCLUDE), so it is an index-only scan
and a large token table's heap is not read. SQLite has no INCLUDE: there the
index is a plain unique one, in place of the unnamed unique constraint.
"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '8c41f0a7d2e5'
down_revision = '3a1d7d54d40e'
branch_labels = None
depends_on = None

INDEX = 'ix_token_access_token_digest'
COVERED = ['application_id', 'user_id', 'scope', 'issued_at', 'expires_in', 'revoked_at']
# SQLite's constraints from the initial schema have no name; batch mode names them so one can be dropped.
SQLITE_NAMES = {'uq': 'uq_%(table_name)s_%(column_0_name)s'}


def upgrade():
    if op.get_bind().dialect.name == 'postgresql':
        op.create_index(INDEX, 'token', ['access_token_digest'], unique=True, postgresql_include=COVERED)
        op.drop_constraint('token_access_token_digest_key', 'token', type_='unique')
        return
    with op.batch_alter_table('token', naming_convention=SQLITE_NAMES, recreate='always') as batch_op:
        batch_op.drop_constraint('uq_token_access_token_digest', type_='unique')
        batch_op.create_index(INDEX, ['access_token_digest'], unique=True)


def downgrade():
    if op.get_bind().dialect.name == 'postgresql':
        op.create_unique_constraint('token_access_token_digest_key', 'token', ['access_token_digest'])
        op.drop_index(INDEX, table_name='token')
        return
    with op.batch_alter_table('token', recreate='always') as batch_op:
        batch_op.drop_index(INDEX)
        batch_op.create_unique_constraint('uq_token_access_token_digest', ['access_token_digest'])
