"""application: introspect (a resource server); no system admin may be a service account

Revision ID: c8e1f5a3d7b2
Revises: b8d2f4a6c1e3
Create Date: 2026-11-26 05:05:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'c8e1f5a3d7b2'
down_revision = 'b8d2f4a6c1e3'
branch_labels = None
depends_on = None


def upgrade():
    # A service account's password grant, and the client_credentials tokens of an application bound to
    # it, act as that account: a system admin's would hand every domain to whoever holds the application
    # (docs/security.md). The operator decides which of the two the account keeps; nothing is guessed here.
    both = op.get_bind().execute(
        sa.text('SELECT id, email FROM "user" WHERE system_admin AND service_account ORDER BY id')
    ).fetchall()
    if both:
        accounts = ", ".join(f"{row.email} (id {row.id})" for row in both)
        raise RuntimeError(
            f"These users are both system admins and service accounts, which is no longer allowed: {accounts}. "
            "Remove one of the two from each (the admin API: PATCH /api/engine/v2/users/ID with "
            '{"service_account": false} or {"system_admin": false}; or the console), then run the upgrade again.'
        )
    # Existing applications introspect only their own tokens until an admin marks them resource servers.
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.add_column(sa.Column('introspect', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade():
    with op.batch_alter_table('application', schema=None) as batch_op:
        batch_op.drop_column('introspect')
