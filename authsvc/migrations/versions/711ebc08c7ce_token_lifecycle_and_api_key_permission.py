"""token lifecycle and api key permission

Token: grant_expires_at (the end of the whole grant, carried across refresh
rotation) and purgeable_at (indexed: when `tokens purge` may delete the row).
ApiKey: permission level and last_used_at.

Revision ID: 711ebc08c7ce
Revises: 402bc571acde
Create Date: 2026-11-21 20:06:56.385539

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '711ebc08c7ce'
down_revision = '402bc571acde'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('api_key', schema=None) as batch_op:
        batch_op.add_column(sa.Column('permission', sa.String(length=10), server_default='user', nullable=False))
        batch_op.add_column(sa.Column('last_used_at', sa.Integer(), nullable=True))

    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.add_column(sa.Column('grant_expires_at', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('purgeable_at', sa.Integer(), nullable=True))

    # Existing rows: the grant ends when their refresh token does, and a row
    # is purgeable once revoked, or once both of its tokens have expired.
    op.execute(
        "UPDATE token SET grant_expires_at = refresh_expires_at, purgeable_at = CASE"
        " WHEN revoked_at IS NOT NULL THEN revoked_at"
        " WHEN refresh_expires_at IS NOT NULL AND refresh_expires_at > issued_at + expires_in THEN refresh_expires_at"
        " ELSE issued_at + expires_in END"
    )

    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.alter_column('purgeable_at', existing_type=sa.Integer(), nullable=False)
        batch_op.create_index(batch_op.f('ix_token_purgeable_at'), ['purgeable_at'], unique=False)


def downgrade():
    with op.batch_alter_table('token', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_token_purgeable_at'))
        batch_op.drop_column('purgeable_at')
        batch_op.drop_column('grant_expires_at')

    with op.batch_alter_table('api_key', schema=None) as batch_op:
        batch_op.drop_column('last_used_at')
        batch_op.drop_column('permission')
