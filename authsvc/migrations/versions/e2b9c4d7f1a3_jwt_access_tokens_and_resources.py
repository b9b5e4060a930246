"""JWT access tokens (RFC 9068) and resource indicators (RFC 8707)

Revision ID: e2b9c4d7f1a3
Revises: c4f8a2d6e1b9
Create Date: 2026-11-26 08:30:00.000000

An application chooses its access token format and lists the resources its
tokens may be for; a token keeps its audience and its grant's resources. On
PostgreSQL the covering index of the inspect lookup also carries the audience,
so that inspect stays an index-only scan.
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'e2b9c4d7f1a3'
down_revision = 'c4f8a2d6e1b9'
branch_labels = None
depends_on = None

INDEX = 'ix_token_access_token_digest'
# As DPoP's migration (d1f4a8c2e6b9) left it: the bound key's thumbprint is covered too.
COVERED = ['application_id', 'user_id', 'scope', 'issued_at', 'expires_in', 'revoked_at', 'dpop_jkt']


def upgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('access_token_format', sa.String(length=10), server_default='opaque', nullable=False)
        )
        batch_op.add_column(sa.Column('resources', sa.JSON(), nullable=True))
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.add_column(sa.Column('audience', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('resources', sa.Text(), nullable=True))
    if op.get_bind().dialect.name == 'postgresql':
        op.drop_index(INDEX, table_name='token')
        op.create_index(
            INDEX, 'token', ['access_token_digest'], unique=True, postgresql_include=[*COVERED, 'audience']
        )


def downgrade():
    if op.get_bind().dialect.name == 'postgresql':
        op.drop_index(INDEX, table_name='token')
        op.create_index(INDEX, 'token', ['access_token_digest'], unique=True, postgresql_include=COVERED)
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.drop_column('resources')
        batch_op.drop_column('audience')
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_column('resources')
        batch_op.drop_column('access_token_format')
