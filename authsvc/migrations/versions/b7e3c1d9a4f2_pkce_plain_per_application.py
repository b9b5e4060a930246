"""pkce plain per application

Revision ID: b7e3c1d9a4f2
Revises: c5e0a1f7b3d2
Create Date: 2026-11-25 00:50:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b7e3c1d9a4f2'
down_revision = 'c5e0a1f7b3d2'
branch_labels = None
depends_on = None


def upgrade():
    # Existing applications keep their require_pkce; none of them allows plain any more (RFC 9700 2.1.1).
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(sa.Column('allow_plain_pkce', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_column('allow_plain_pkce')
