"""domain.profile: the security profile of every application of the domain (standard or fapi2)

Revision ID: a8c4f1e7d2b9
Revises: e2b9c4d7f1a3
Create Date: 2026-11-26 08:20:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'a8c4f1e7d2b9'
down_revision = 'e2b9c4d7f1a3'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('domain', schema=None) as batch_op:
        batch_op.add_column(sa.Column('profile', sa.String(length=16), server_default='standard', nullable=False))


def downgrade():
    with op.batch_alter_table('domain', schema=None) as batch_op:
        batch_op.drop_column('profile')
