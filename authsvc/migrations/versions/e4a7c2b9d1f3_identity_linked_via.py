"""idfix: how each external identity was linked

Revision ID: e4a7c2b9d1f3
Revises: b7e3c1d9a4f2
Create Date: 2026-11-25 02:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'e4a7c2b9d1f3'
down_revision = 'b7e3c1d9a4f2'
branch_labels = None
depends_on = None


def upgrade():
    # Existing links count as automatic ("email"): a privileged user among them
    # must link again by an explicit step before signing in through SSO.
    with op.batch_alter_table('external_identity', schema=None) as batch_op:
        batch_op.add_column(sa.Column('via', sa.String(length=20), server_default='email', nullable=False))


def downgrade():
    with op.batch_alter_table('external_identity', schema=None) as batch_op:
        batch_op.drop_column('via')
