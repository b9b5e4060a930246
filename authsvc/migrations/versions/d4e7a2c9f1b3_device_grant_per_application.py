"""device grant per application (branch device)

Revision ID: d4e7a2c9f1b3
Revises: e6b2f0a9d3c1
Create Date: 2026-11-25 02:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'd4e7a2c9f1b3'
down_revision = 'e6b2f0a9d3c1'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(sa.Column('device', sa.Boolean(), server_default=sa.false(), nullable=False))
    # The device grant's type, urn:ietf:params:oauth:grant-type:device_code, is 44 characters.
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.alter_column('grant_type', existing_type=sa.String(length=40), type_=sa.String(length=64),
                              existing_nullable=False)


def downgrade():
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.alter_column('grant_type', existing_type=sa.String(length=64), type_=sa.String(length=40),
                              existing_nullable=False)
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_column('device')
