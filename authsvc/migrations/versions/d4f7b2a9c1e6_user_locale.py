"""user.locale: the language the user chose for pages and e-mails (docs/translations.md)

Revision ID: d4f7b2a9c1e6
Revises: c3e8a5f1b9d2
Create Date: 2026-12-02 11:50:00.000000

"""
from alembic import op
import sqlalchemy as sa


# A rebuild of `user` on SQLite keeps AUTOINCREMENT (migration e5c1a9d7b3f2).
IDS_NEVER_REUSED = {'sqlite_autoincrement': True}

# revision identifiers, used by Alembic.
revision = 'd4f7b2a9c1e6'
down_revision = 'c3e8a5f1b9d2'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('user', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('locale', sa.String(length=35), nullable=True))


def downgrade():
    with op.batch_alter_table('user', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('locale')
