"""oidc: the sign-in behind a token (auth_time, amr, sid) and the application's ID token algorithm

Revision ID: e6b2f0a9d3c1
Revises: d4a8e2f1c7b9
Create Date: 2026-11-25 02:10:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'e6b2f0a9d3c1'
down_revision = 'd4a8e2f1c7b9'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.add_column(sa.Column('auth_time', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('amr', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('sid', sa.String(length=64), nullable=True))
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(sa.Column('id_token_signed_response_alg', sa.String(length=10), nullable=True))


def downgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_column('id_token_signed_response_alg')
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.drop_column('sid')
        batch_op.drop_column('amr')
        batch_op.drop_column('auth_time')
