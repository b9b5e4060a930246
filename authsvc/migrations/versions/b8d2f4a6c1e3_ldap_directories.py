"""LDAP / Active Directory directories of a domain and the users' entries in them

Revision ID: b8d2f4a6c1e3
Revises: b3f1d8c2e6a9
Create Date: 2026-11-25 04:20:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b8d2f4a6c1e3'
down_revision = 'b3f1d8c2e6a9'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'ldap_directory',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('url', sa.String(length=500), nullable=False),
        sa.Column('starttls', sa.Boolean(), nullable=False),
        sa.Column('bind_dn', sa.String(length=500), nullable=False),
        sa.Column('bind_password_encrypted', sa.Text(), nullable=False),
        sa.Column('base_dn', sa.String(length=500), nullable=False),
        sa.Column('user_filter', sa.String(length=1000), nullable=False),
        sa.Column('group_attribute', sa.String(length=100), nullable=False),
        sa.Column('disabled_attribute', sa.String(length=100), nullable=True),
        sa.Column('ca_pem', sa.Text(), nullable=True),
        sa.Column('allow_private_network', sa.Boolean(), nullable=False),
        sa.Column('enabled', sa.Boolean(), nullable=False),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id']),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('ldap_directory', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ldap_directory_domain_id'), ['domain_id'], unique=False)

    op.create_table(
        'ldap_account',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('directory_id', sa.String(length=32), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('subject', sa.String(length=500), nullable=False),
        sa.Column('dn', sa.String(length=1000), nullable=False),
        sa.Column('via', sa.String(length=20), nullable=False),
        sa.Column('checked_at', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['directory_id'], ['ldap_directory.id']),
        sa.ForeignKeyConstraint(['user_id'], ['user.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('directory_id', 'subject'),
    )
    with op.batch_alter_table('ldap_account', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ldap_account_user_id'), ['user_id'], unique=False)


def downgrade():
    with op.batch_alter_table('ldap_account', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ldap_account_user_id'))
    op.drop_table('ldap_account')
    with op.batch_alter_table('ldap_directory', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ldap_directory_domain_id'))
    op.drop_table('ldap_directory')
