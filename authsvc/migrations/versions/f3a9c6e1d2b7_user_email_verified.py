"""user: whether the e-mail address is verified (the email_verified claim)

Revision ID: f3a9c6e1d2b7
Revises: c8e1f5a3d7b2
Create Date: 2026-11-26 05:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'f3a9c6e1d2b7'
down_revision = 'c8e1f5a3d7b2'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('email_verified', sa.Boolean(), server_default=sa.false(), nullable=False))
    # Existing users: verified, as admins and the command line made them, except
    # those a first sign-in made (via "new_user") through an SSO provider without
    # trust_email or through an LDAP directory, whose address nobody vouched for.
    # (Links made before "via" existed count as "email" links, which needed a
    # verified address, and stay verified.)
    user = sa.table('user', sa.column('id', sa.Integer()), sa.column('email_verified', sa.Boolean()))
    identity = sa.table(
        'external_identity',
        sa.column('user_id', sa.Integer()),
        sa.column('provider_id', sa.String()),
        sa.column('via', sa.String()),
    )
    provider = sa.table('sso_provider', sa.column('id', sa.String()), sa.column('trust_email', sa.Boolean()))
    account = sa.table('ldap_account', sa.column('user_id', sa.Integer()), sa.column('via', sa.String()))
    unvouched_sso = (
        sa.select(identity.c.user_id)
        .select_from(identity.join(provider, provider.c.id == identity.c.provider_id))
        .where(identity.c.via == 'new_user', provider.c.trust_email == sa.false())
    )
    unvouched_ldap = sa.select(account.c.user_id).where(account.c.via == 'new_user')
    op.execute(
        user.update()
        .where(user.c.id.not_in(unvouched_sso), user.c.id.not_in(unvouched_ldap))
        .values(email_verified=True)
    )


def downgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_column('email_verified')
