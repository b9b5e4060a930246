"""domain.open_registration: dynamic client registration without an initial access token; application.openly_registered

Revision ID: a8e4c1f7d3b2
Revises: b8e3d1f05a7c
Create Date: 2026-12-02 15:40:00.000000

"""
from alembic import op
import sqlalchemy as sa

# Batch rebuilds on SQLite keep AUTOINCREMENT: ids are never reused (docs/security.md).
IDS_NEVER_REUSED = {'sqlite_autoincrement': True}


# revision identifiers, used by Alembic.
revision = 'a8e4c1f7d3b2'
down_revision = 'b8e3d1f05a7c'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('open_registration', sa.Boolean(), server_default=sa.false(), nullable=False))
    with op.batch_alter_table('application', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('openly_registered', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade():
    with op.batch_alter_table('application', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('openly_registered')
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('open_registration')
