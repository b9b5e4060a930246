"""multi-factor sign-in: authenticator apps, passkeys, recovery codes, the domain's policy

Revision ID: b2d8f4a6c1e3
Revises: a7c3e9f1b2d4
Create Date: 2026-11-25 04:15:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b2d8f4a6c1e3'
down_revision = 'a7c3e9f1b2d4'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'mfa_factor',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('secret', sa.Text(), nullable=True),
        sa.Column('last_step', sa.BigInteger(), nullable=False),
        sa.Column('credential_id', sa.String(length=1400), nullable=True),
        sa.Column('public_key', sa.Text(), nullable=True),
        sa.Column('sign_count', sa.BigInteger(), nullable=False),
        sa.Column('confirmed', sa.Boolean(), nullable=False),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], name='fk_mfa_factor_user_id_user'),
        sa.PrimaryKeyConstraint('id', name='pk_mfa_factor'),
        sa.UniqueConstraint('credential_id', name='uq_mfa_factor_credential_id'),
    )
    op.create_index('ix_mfa_factor_user_id', 'mfa_factor', ['user_id'])
    op.create_table(
        'recovery_code',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('used_at', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], name='fk_recovery_code_user_id_user'),
        sa.PrimaryKeyConstraint('id', name='pk_recovery_code'),
    )
    op.create_index('ix_recovery_code_user_id', 'recovery_code', ['user_id'])
    with op.batch_alter_table('domain', schema=None) as batch_op:
        batch_op.add_column(sa.Column('mfa_require', sa.String(length=10), server_default='off', nullable=False))


def downgrade():
    with op.batch_alter_table('domain', schema=None) as batch_op:
        batch_op.drop_column('mfa_require')
    op.drop_index('ix_recovery_code_user_id', table_name='recovery_code')
    op.drop_table('recovery_code')
    op.drop_index('ix_mfa_factor_user_id', table_name='mfa_factor')
    op.drop_table('mfa_factor')
