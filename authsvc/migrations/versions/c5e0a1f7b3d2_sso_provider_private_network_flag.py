"""sso provider: allow_private_network, set only by a system admin

Revision ID: c5e0a1f7b3d2
Revises: 8c41f0a7d2e5
Create Date: 2026-12-02 10:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'c5e0a1f7b3d2'
down_revision = '8c41f0a7d2e5'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('sso_provider', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('allow_private_network', sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade():
    with op.batch_alter_table('sso_provider', schema=None) as batch_op:
        batch_op.drop_column('allow_private_network')
