"""invitation: an admin's invitation by e-mail; domain.signup and signup_email_domains; user.signup_pending

Revision ID: e5a9c3f7b1d2
Revises: f1b8c4e2a7d9
Create Date: 2026-12-02 08:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# A rebuild of `user` or `domain` on SQLite keeps AUTOINCREMENT (migration e5c1a9d7b3f2).
IDS_NEVER_REUSED = {'sqlite_autoincrement': True}

# revision identifiers, used by Alembic.
revision = 'e5a9c3f7b1d2'
down_revision = 'f1b8c4e2a7d9'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'invitation',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('email', sa.String(length=320), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('role', sa.String(length=10), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('created_by', sa.String(length=120), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('expires_at', sa.BigInteger(), nullable=False),
        sa.Column('accepted_at', sa.BigInteger(), nullable=True),
        sa.Column('revoked_at', sa.BigInteger(), nullable=True),
        sa.Column('user_id', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id'], ),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('digest'),
    )
    with op.batch_alter_table('invitation', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_invitation_domain_id'), ['domain_id'], unique=False)
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('signup', sa.String(length=10), server_default='off', nullable=False))
        batch_op.add_column(sa.Column('signup_email_domains', sa.Text(), server_default='', nullable=False))
    with op.batch_alter_table('user', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('signup_pending', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade():
    with op.batch_alter_table('user', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('signup_pending')
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('signup_email_domains')
        batch_op.drop_column('signup')
    with op.batch_alter_table('invitation', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_invitation_domain_id'))
    op.drop_table('invitation')
