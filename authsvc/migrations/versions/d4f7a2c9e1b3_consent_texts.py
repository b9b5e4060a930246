"""consent_texts: scope_description (a domain's words for its scopes) and application_logo

Revision ID: d4f7a2c9e1b3
Revises: d4f7b2a9c1e6
Create Date: 2026-12-02 12:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'd4f7a2c9e1b3'
down_revision = 'd4f7b2a9c1e6'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'scope_description',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('scope', sa.String(length=200), nullable=False),
        sa.Column('locale', sa.String(length=35), nullable=False),
        sa.Column('text', sa.String(length=300), nullable=False),
        sa.Column('updated_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('domain_id', 'scope', 'locale'),
    )
    op.create_index(op.f('ix_scope_description_domain_id'), 'scope_description', ['domain_id'], unique=False)
    op.create_table(
        'application_logo',
        sa.Column('application_id', sa.Integer(), nullable=False),
        sa.Column('logo', sa.LargeBinary(), nullable=True),
        sa.Column('logo_type', sa.String(length=20), nullable=True),
        sa.Column('logo_digest', sa.String(length=64), nullable=True),
        sa.Column('declared_uri', sa.String(length=2000), nullable=True),
        sa.Column('updated_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['application_id'], ['application.id']),
        sa.PrimaryKeyConstraint('application_id'),
    )


def downgrade():
    op.drop_table('application_logo')
    op.drop_index(op.f('ix_scope_description_domain_id'), table_name='scope_description')
    op.drop_table('scope_description')
