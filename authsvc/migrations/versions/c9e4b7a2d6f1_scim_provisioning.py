"""SCIM provisioning: users' provisioning fields, groups and their members, a domain's last SCIM activity

Revision ID: c9e4b7a2d6f1
Revises: f3a9c6e1d2b7
Create Date: 2026-11-26 05:10:00

"""
from alembic import op
import sqlalchemy as sa


revision = 'c9e4b7a2d6f1'
down_revision = 'f3a9c6e1d2b7'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('provisioned_by', sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column('external_id', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('scim_profile', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('scim_modified_at', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('scim_deleted_at', sa.Integer(), nullable=True))
        batch_op.create_index('ix_user_domain_external_id', ['domain_id', 'external_id'], unique=False)
    with op.batch_alter_table('domain', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scim_last_activity', sa.Integer(), nullable=True))
    op.create_table(
        'scim_group',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('display_name', sa.String(length=255), nullable=False),
        sa.Column('external_id', sa.String(length=255), nullable=True),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.Column('modified_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('domain_id', 'display_name'),
    )
    op.create_index('ix_scim_group_domain_id', 'scim_group', ['domain_id'], unique=False)
    op.create_table(
        'scim_group_member',
        sa.Column('group_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('display', sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(['group_id'], ['scim_group.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('group_id', 'user_id'),
    )
    op.create_index('ix_scim_group_member_user_id', 'scim_group_member', ['user_id'], unique=False)


def downgrade():
    op.drop_index('ix_scim_group_member_user_id', table_name='scim_group_member')
    op.drop_table('scim_group_member')
    op.drop_index('ix_scim_group_domain_id', table_name='scim_group')
    op.drop_table('scim_group')
    with op.batch_alter_table('domain', schema=None) as batch_op:
        batch_op.drop_column('scim_last_activity')
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_index('ix_user_domain_external_id')
        batch_op.drop_column('scim_deleted_at')
        batch_op.drop_column('scim_modified_at')
        batch_op.drop_column('scim_profile')
        batch_op.drop_column('external_id')
        batch_op.drop_column('provisioned_by')
