"""client metadata documents and resource servers

Revision ID: d7a3c9e5b1f4
Revises: d4f7a2c9e1b3
Create Date: 2026-12-02 12:00:00.000000

A client may be named by the URL of its Client ID Metadata Document: the
client_id column takes a URL (2000 characters), and is unique per domain (the
same document's client has a row in each domain that reads it), not overall.
A domain chooses which documents it reads; an application row made from one
keeps until when its document holds and its logo. A domain registers its
protected resources (resource_server).
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'd7a3c9e5b1f4'
down_revision = 'd4f7a2c9e1b3'
branch_labels = None
depends_on = None

# Rebuilds of `domain` and `application` on SQLite keep AUTOINCREMENT (migration e5c1a9d7b3f2).
IDS_NEVER_REUSED = {'sqlite_autoincrement': True}
# SQLite's constraints from the initial schema have no name; batch mode names them so one can be dropped.
SQLITE_NAMES = {'uq': 'uq_%(table_name)s_%(column_0_name)s'}
INDEX = 'ix_application_client_id_domain_id'


def upgrade():
    op.create_table(
        'resource_server',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('uri', sa.String(length=2000), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('scopes', sa.Text(), nullable=False),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('domain_id', 'uri'),
    )
    op.create_index(op.f('ix_resource_server_domain_id'), 'resource_server', ['domain_id'], unique=False)
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.add_column(
            sa.Column('client_metadata_documents', sa.String(length=10), server_default='any', nullable=False)
        )
        batch_op.add_column(sa.Column('client_metadata_hosts', sa.Text(), server_default='', nullable=False))
        batch_op.add_column(
            sa.Column(
                'client_metadata_allow_private_network', sa.Boolean(), server_default=sa.false(), nullable=False
            )
        )
    postgresql = op.get_bind().dialect.name == 'postgresql'
    if postgresql:
        op.drop_constraint('application_client_id_key', 'application', type_='unique')
    with op.batch_alter_table(
        'application',
        schema=None,
        table_kwargs=IDS_NEVER_REUSED,
        naming_convention=SQLITE_NAMES,
        recreate='auto' if postgresql else 'always',
    ) as batch_op:
        if not postgresql:
            batch_op.drop_constraint('uq_application_client_id', type_='unique')
        batch_op.alter_column(
            'client_id', existing_type=sa.String(length=64), type_=sa.String(length=2000), existing_nullable=False
        )
        batch_op.add_column(sa.Column('metadata_document_expires_at', sa.Integer(), nullable=True))
        batch_op.create_index(INDEX, ['client_id', 'domain_id'], unique=True)


def downgrade():
    # Rows made from metadata documents cannot keep a URL in 64 characters: they go first, with what refers to them.
    application = sa.table('application', sa.column('metadata_document_expires_at'))
    for table in ('token', 'consent'):
        op.execute(
            f'DELETE FROM {table} WHERE application_id IN '
            '(SELECT id FROM application WHERE metadata_document_expires_at IS NOT NULL)'
        )
    op.execute(application.delete().where(application.c.metadata_document_expires_at.isnot(None)))
    postgresql = op.get_bind().dialect.name == 'postgresql'
    with op.batch_alter_table(
        'application', schema=None, table_kwargs=IDS_NEVER_REUSED, recreate='auto' if postgresql else 'always'
    ) as batch_op:
        batch_op.drop_index(INDEX)
        batch_op.drop_column('metadata_document_expires_at')
        batch_op.alter_column(
            'client_id', existing_type=sa.String(length=2000), type_=sa.String(length=64), existing_nullable=False
        )
        if postgresql:
            batch_op.create_unique_constraint('application_client_id_key', ['client_id'])
        else:
            batch_op.create_unique_constraint('uq_application_client_id', ['client_id'])
    with op.batch_alter_table('domain', schema=None, table_kwargs=IDS_NEVER_REUSED) as batch_op:
        batch_op.drop_column('client_metadata_allow_private_network')
        batch_op.drop_column('client_metadata_hosts')
        batch_op.drop_column('client_metadata_documents')
    op.drop_index(op.f('ix_resource_server_domain_id'), table_name='resource_server')
    op.drop_table('resource_server')
