"""trusted_issuer.create_users: an ID-JAG issuer's unknown users become users of the domain

Revision ID: b8e3d1f6a2c4
Revises: a8e4c1f7d3b2
Create Date: 2026-12-02 15:30:00.000000

Off for every issuer trusted so far: an unknown user stays refused until an
admin turns it on. Only a column is added (no table rebuild on SQLite).
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b8e3d1f6a2c4'
down_revision = 'a8e4c1f7d3b2'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('trusted_issuer', schema=None) as batch_op:
        batch_op.add_column(sa.Column('create_users', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade():
    with op.batch_alter_table('trusted_issuer', schema=None) as batch_op:
        batch_op.drop_column('create_users')
