"""outbox_item: work to do after a commit (e-mail first); account_link: single-use links sent by e-mail

Revision ID: b7d2e9f4a1c6
Revises: a8c4f1e7d2b9
Create Date: 2026-12-02 05:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b7d2e9f4a1c6'
down_revision = 'a8c4f1e7d2b9'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'outbox_item',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=40), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=True),
        sa.Column('payload', sa.Text(), nullable=True),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('available_at', sa.BigInteger(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('claimed_by', sa.String(length=64), nullable=True),
        sa.Column('claimed_until', sa.BigInteger(), nullable=True),
        sa.Column('done_at', sa.BigInteger(), nullable=True),
        sa.Column('given_up_at', sa.BigInteger(), nullable=True),
        sa.Column('last_error', sa.String(length=500), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('outbox_item', schema=None) as batch_op:
        batch_op.create_index('ix_outbox_item_waiting', ['done_at', 'given_up_at', 'available_at'], unique=False)
    op.create_table(
        'account_link',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('purpose', sa.String(length=20), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('email', sa.String(length=320), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('expires_at', sa.BigInteger(), nullable=False),
        sa.Column('used_at', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('digest'),
    )
    with op.batch_alter_table('account_link', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_account_link_user_id'), ['user_id'], unique=False)


def downgrade():
    with op.batch_alter_table('account_link', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_account_link_user_id'))
    op.drop_table('account_link')
    with op.batch_alter_table('outbox_item', schema=None) as batch_op:
        batch_op.drop_index('ix_outbox_item_waiting')
    op.drop_table('outbox_item')
