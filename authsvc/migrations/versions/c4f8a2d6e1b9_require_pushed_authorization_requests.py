"""require pushed authorization requests per application

Revision ID: c4f8a2d6e1b9
Revises: d1f4a8c2e6b9
Create Date: 2026-11-26 08:30:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'c4f8a2d6e1b9'
down_revision = 'd1f4a8c2e6b9'
branch_labels = None
depends_on = None


def upgrade():
    # RFC 9126 6: existing applications may go on sending their requests through the browser.
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('require_pushed_authorization_requests', sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_column('require_pushed_authorization_requests')
