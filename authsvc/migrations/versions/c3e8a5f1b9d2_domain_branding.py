"""domain_branding: a domain's look (name, logo, colours, links); domain.branding_version

Revision ID: c3e8a5f1b9d2
Revises: c3e8a5d1f7b2
Create Date: 2026-12-02 08:30:00.000000

"""
from alembic import op
import sqlalchemy as sa


# A rebuild of `domain` on SQLite keeps AUTOINCREMENT (migration e5c1a9d7b3f2).
IDS_NEVER_REUSED = {'sqlite_autoincrement': True}

# revision identifiers, used by Alembic.
revision = 'c3e8a5f1b9d2'
down_revision = 'c3e8a5d1f7b2'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'domain_branding',
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('display_name', sa.String(length=200), nullable=True),
        sa.Column('primary_color', sa.String(length=7), nullable=True),
        sa.Column('background_color', sa.String(length=7), nullable=True),
        sa.Column('support_url', sa.String(length=2000), nullable=True),
        sa.Column('support_email', sa.String(length=320), nullable=True),
        sa.Column('privacy_url', sa.String(length=2000), nullable=True),
        sa.Column('terms_url', sa.String(length=2000), nullable=True),
        sa.Column('default_locale', sa.String(length=35), nullable=True),
        sa.Column('logo', sa.LargeBinary(), nullable=True),
        sa.Column('logo_type', sa.String(length=20), nullable=True),
        sa.Column('logo_digest', sa.String(length=64), nullable=True),
        sa.Column('updated_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id']),
        sa.PrimaryKeyConstraint('domain_id'),
    )
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('branding_version', sa.Integer(), nullable=True))


def downgrade():
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('branding_version')
    op.drop_table('domain_branding')
