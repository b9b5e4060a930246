"""token exchange (RFC 8693) and ID-JAGs: trusted_issuer; application.token_exchange; token.act

Revision ID: f7a2c9e4b1d6
Revises: d7a3c9e5b1f4
Create Date: 2026-12-02 12:00:00.000000

A domain lists the issuers whose JWTs it accepts and the audiences it issues
ID-JAGs for; an application may be allowed to exchange tokens; a token keeps
its ``act`` claim. On PostgreSQL the covering index of the inspect lookup also
carries ``act``, so that inspect stays an index-only scan. Only columns are
added (no table rebuild on SQLite).
"""
from alembic import op
import sqlalchemy as sa

# Batch rebuilds on SQLite keep AUTOINCREMENT: ids are never reused (docs/security.md).
IDS_NEVER_REUSED = {'sqlite_autoincrement': True}


# revision identifiers, used by Alembic.
revision = 'f7a2c9e4b1d6'
down_revision = 'd7a3c9e5b1f4'
branch_labels = None
depends_on = None

INDEX = 'ix_token_access_token_digest'
# As migration e2b9c4d7f1a3 left it.
COVERED = ['application_id', 'user_id', 'scope', 'issued_at', 'expires_in', 'revoked_at', 'dpop_jkt', 'audience']


def upgrade():
    op.create_table(
        'trusted_issuer',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('issuer', sa.String(length=2000), nullable=False),
        sa.Column('jwks_uri', sa.String(length=2000), nullable=True),
        sa.Column('subject_tokens', sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column('id_jag', sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column('id_jag_audience', sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column('client_ids', sa.JSON(), nullable=True),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('domain_id', 'issuer', name='uq_trusted_issuer_domain_issuer'),
    )
    op.create_index('ix_trusted_issuer_domain_id', 'trusted_issuer', ['domain_id'])
    with op.batch_alter_table('application', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('token_exchange', sa.JSON(), nullable=True))
    with op.batch_alter_table('token', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(sa.Column('act', sa.JSON(), nullable=True))
    if op.get_bind().dialect.name == 'postgresql':
        op.drop_index(INDEX, table_name='token')
        op.create_index(INDEX, 'token', ['access_token_digest'], unique=True, postgresql_include=[*COVERED, 'act'])


def downgrade():
    if op.get_bind().dialect.name == 'postgresql':
        op.drop_index(INDEX, table_name='token')
        op.create_index(INDEX, 'token', ['access_token_digest'], unique=True, postgresql_include=COVERED)
    with op.batch_alter_table('token', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('act')
    with op.batch_alter_table('application', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('token_exchange')
    op.drop_index('ix_trusted_issuer_domain_id', table_name='trusted_issuer')
    op.drop_table('trusted_issuer')
