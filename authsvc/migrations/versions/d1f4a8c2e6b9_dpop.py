"""dpop: per-application dpop_bound_access_tokens; tokens keep the thumbprint of their key

Revision ID: d1f4a8c2e6b9
Revises: b7d3e9a1c5f2
Create Date: 2026-11-26 08:40:00.000000

DPoP (RFC 9449). On PostgreSQL the covering index of the access token digest
(8c41f0a7d2e5) also carries dpop_jkt, so that inspect's lookup stays an
index-only scan: it is built anew under another name, then takes the old
one's place (the table is locked for writes while it is built).
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'd1f4a8c2e6b9'
down_revision = 'b7d3e9a1c5f2'
branch_labels = None
depends_on = None

INDEX = 'ix_token_access_token_digest'
COVERED = ['application_id', 'user_id', 'scope', 'issued_at', 'expires_in', 'revoked_at']


def _cover(columns):
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.create_index(f'{INDEX}_new', 'token', ['access_token_digest'], unique=True, postgresql_include=columns)
    op.drop_index(INDEX, table_name='token')
    op.execute(f'ALTER INDEX {INDEX}_new RENAME TO {INDEX}')


def upgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('dpop_bound_access_tokens', sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.add_column(sa.Column('dpop_jkt', sa.String(length=43), nullable=True))
    _cover([*COVERED, 'dpop_jkt'])


def downgrade():
    _cover(COVERED)
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.drop_column('dpop_jkt')
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_column('dpop_bound_access_tokens')
