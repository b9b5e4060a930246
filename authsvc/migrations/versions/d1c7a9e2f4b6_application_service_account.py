"""cc: application bound to a service account (client credentials grant)

Revision ID: d1c7a9e2f4b6
Revises: d4e7a2c9f1b3
Create Date: 2026-11-25 02:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'd1c7a9e2f4b6'
down_revision = 'd4e7a2c9f1b3'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(sa.Column('service_account_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key('fk_application_service_account_id_user', 'user', ['service_account_id'], ['id'])


def downgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_constraint('fk_application_service_account_id_user', type_='foreignkey')
        batch_op.drop_column('service_account_id')
