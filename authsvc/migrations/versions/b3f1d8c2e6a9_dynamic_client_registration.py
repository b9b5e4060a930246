"""dynamic client registration: initial access tokens; an application's registered grant types and registration access token

Revision ID: b3f1d8c2e6a9
Revises: b3e8d5a1c9f7
Create Date: 2026-11-25 04:10:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b3f1d8c2e6a9'
down_revision = 'b3e8d5a1c9f7'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'registration_token',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('token_digest', sa.String(length=64), nullable=False),
        sa.Column('max_uses', sa.Integer(), nullable=False),
        sa.Column('uses', sa.Integer(), nullable=False),
        sa.Column('created_by', sa.String(length=120), nullable=False),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.Column('expires_at', sa.Integer(), nullable=False),
        sa.Column('revoked_at', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('token_digest'),
    )
    op.create_index('ix_registration_token_domain_id', 'registration_token', ['domain_id'])
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(sa.Column('grant_types', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('registration_token_id', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('registration_access_token_digest', sa.String(length=64), nullable=True))
        batch_op.create_foreign_key(
            'fk_application_registration_token_id', 'registration_token', ['registration_token_id'], ['id']
        )


def downgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_constraint('fk_application_registration_token_id', type_='foreignkey')
        batch_op.drop_column('registration_access_token_digest')
        batch_op.drop_column('registration_token_id')
        batch_op.drop_column('grant_types')
    op.drop_index('ix_registration_token_domain_id', table_name='registration_token')
    op.drop_table('registration_token')
