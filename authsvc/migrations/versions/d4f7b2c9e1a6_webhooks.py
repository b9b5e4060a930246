"""webhook_endpoint: a domain's signed webhooks; outbox_item.ordering_key: items delivered in order per key

Revision ID: d4f7b2c9e1a6
Revises: f7a2c9e4b1d6
Create Date: 2026-12-02 11:45:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'd4f7b2c9e1a6'
down_revision = 'f7a2c9e4b1d6'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'webhook_endpoint',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('url', sa.String(length=2000), nullable=False),
        sa.Column('events', sa.Text(), nullable=False),
        sa.Column('enabled', sa.Boolean(), nullable=False),
        sa.Column('secret_encrypted', sa.Text(), nullable=False),
        sa.Column('previous_secret_encrypted', sa.Text(), nullable=True),
        sa.Column('previous_secret_until', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('webhook_endpoint', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_endpoint_domain_id'), ['domain_id'], unique=False)
    with op.batch_alter_table('outbox_item', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ordering_key', sa.String(length=120), nullable=True))
        batch_op.create_index('ix_outbox_item_ordering', ['ordering_key', 'id'], unique=False)


def downgrade():
    with op.batch_alter_table('outbox_item', schema=None) as batch_op:
        batch_op.drop_index('ix_outbox_item_ordering')
        batch_op.drop_column('ordering_key')
    with op.batch_alter_table('webhook_endpoint', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_endpoint_domain_id'))
    op.drop_table('webhook_endpoint')
