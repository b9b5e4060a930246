"""oidc: the domains' signing keys

Revision ID: d4a8e2f1c7b9
Revises: e4a7c2b9d1f3
Create Date: 2026-11-25 02:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'd4a8e2f1c7b9'
down_revision = 'e4a7c2b9d1f3'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'signing_key',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('kid', sa.String(length=100), nullable=False),
        sa.Column('alg', sa.String(length=10), nullable=False),
        sa.Column('private_key_encrypted', sa.Text(), nullable=False),
        sa.Column('public_jwk', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.Column('retired_at', sa.Integer(), nullable=True),
        sa.Column('retire_after', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('kid'),
    )
    op.create_index('ix_signing_key_domain_id', 'signing_key', ['domain_id'])
    op.create_index(
        'ix_signing_key_current',
        'signing_key',
        ['domain_id', 'alg'],
        unique=True,
        postgresql_where=sa.text('retired_at IS NULL'),
        sqlite_where=sa.text('retired_at IS NULL'),
    )


def downgrade():
    op.drop_index('ix_signing_key_current', table_name='signing_key')
    op.drop_index('ix_signing_key_domain_id', table_name='signing_key')
    op.drop_table('signing_key')
