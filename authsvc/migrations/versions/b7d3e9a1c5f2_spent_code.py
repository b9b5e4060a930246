"""spent_code: exchanged authorisation codes, so that a Redis failover cannot revive one

Revision ID: b7d3e9a1c5f2
Revises: c9e4b7a2d6f1
Create Date: 2026-11-26 06:05:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b7d3e9a1c5f2'
down_revision = 'c9e4b7a2d6f1'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'spent_code',
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('family', sa.String(length=64), nullable=False),
        sa.Column('expires_at', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('digest', name=op.f('pk_spent_code')),
    )
    with op.batch_alter_table('spent_code', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_spent_code_expires_at'), ['expires_at'], unique=False)


def downgrade():
    with op.batch_alter_table('spent_code', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_spent_code_expires_at'))
    op.drop_table('spent_code')
