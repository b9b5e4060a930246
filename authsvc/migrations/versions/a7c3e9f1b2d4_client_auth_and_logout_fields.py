"""application: client authentication (private_key_jwt) and OpenID Connect logout fields

Revision ID: a7c3e9f1b2d4
Revises: d1c7a9e2f4b6
Create Date: 2026-11-25 04:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'a7c3e9f1b2d4'
down_revision = 'd1c7a9e2f4b6'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(sa.Column('token_endpoint_auth_method', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('jwks', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('jwks_uri', sa.String(length=2000), nullable=True))
        batch_op.add_column(sa.Column('post_logout_redirect_uris', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('backchannel_logout_uri', sa.String(length=2000), nullable=True))


def downgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_column('backchannel_logout_uri')
        batch_op.drop_column('post_logout_redirect_uris')
        batch_op.drop_column('jwks_uri')
        batch_op.drop_column('jwks')
        batch_op.drop_column('token_endpoint_auth_method')
