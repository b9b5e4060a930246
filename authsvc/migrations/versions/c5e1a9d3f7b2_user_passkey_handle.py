"""user.passkey_handle: the random WebAuthn user handle of a user's passkeys (passkey sign-in)

Revision ID: c5e1a9d3f7b2
Revises: b7d2e9f4a1c6
Create Date: 2026-12-02 08:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'c5e1a9d3f7b2'
down_revision = 'b7d2e9f4a1c6'
branch_labels = None
depends_on = None


def upgrade():
    # Passkeys registered before keep working as second factors; their authenticators hold the old
    # handle (authsvc-user-<id>), which passkey sign-in accepts too. Nothing to fill in.
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('passkey_handle', sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f('ix_user_passkey_handle'), ['passkey_handle'], unique=True)


def downgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_user_passkey_handle'))
        batch_op.drop_column('passkey_handle')
