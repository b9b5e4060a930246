"""sso_provider: SAML 2.0 settings (IdP metadata, our key pair, unsolicited responses, clock skew)

Revision ID: b3e8d5a1c9f7
Revises: b2d8f4a6c1e3
Create Date: 2026-11-25 04:20:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b3e8d5a1c9f7'
down_revision = 'b2d8f4a6c1e3'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('sso_provider', schema=None) as batch_op:
        batch_op.add_column(sa.Column('saml_metadata_xml', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('saml_metadata_url', sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column('saml_metadata_fetched_at', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('saml_sp_certificate', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('saml_sp_key_encrypted', sa.Text(), nullable=True))
        batch_op.add_column(
            sa.Column('saml_allow_unsolicited', sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(sa.Column('saml_clock_skew', sa.Integer(), server_default='60', nullable=False))


def downgrade():
    with op.batch_alter_table('sso_provider', schema=None) as batch_op:
        batch_op.drop_column('saml_clock_skew')
        batch_op.drop_column('saml_allow_unsolicited')
        batch_op.drop_column('saml_sp_key_encrypted')
        batch_op.drop_column('saml_sp_certificate')
        batch_op.drop_column('saml_metadata_fetched_at')
        batch_op.drop_column('saml_metadata_url')
        batch_op.drop_column('saml_metadata_xml')
