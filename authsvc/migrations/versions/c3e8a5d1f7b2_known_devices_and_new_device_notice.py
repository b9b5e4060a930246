"""known_device: the browsers each user signed in from; domain.new_device_notice (on by default)

Revision ID: c3e8a5d1f7b2
Revises: e5a9c3f7b1d2
Create Date: 2026-12-02 08:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# A rebuild of `user` or `domain` on SQLite keeps AUTOINCREMENT (migration e5c1a9d7b3f2).
IDS_NEVER_REUSED = {'sqlite_autoincrement': True}

# revision identifiers, used by Alembic.
revision = 'c3e8a5d1f7b2'
down_revision = 'e5a9c3f7b1d2'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'known_device',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('seen_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('user_id', 'digest', name='uq_known_device_user_digest'),
    )
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('new_device_notice', sa.Boolean(), server_default=sa.true(), nullable=False))


def downgrade():
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('new_device_notice')
    op.drop_table('known_device')
