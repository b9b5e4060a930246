"""domain.webhook_events: the event types a domain's enabled webhooks take, read with the domain's row

Revision ID: b8e3d1f05a7c
Revises: d4f7b2c9e1a6
Create Date: 2026-12-02 15:55:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b8e3d1f05a7c'
down_revision = 'd4f7b2c9e1a6'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('domain', schema=None) as batch_op:
        batch_op.add_column(sa.Column('webhook_events', sa.Text(), nullable=True))
    # The endpoints subscribed so far: each domain's enabled ones, their types together.
    connection = op.get_bind()
    taken: dict[int, set[str]] = {}
    for domain_id, events in connection.execute(
        sa.text('SELECT domain_id, events FROM webhook_endpoint WHERE enabled')
    ):
        taken.setdefault(domain_id, set()).update(events.split())
    for domain_id, types in taken.items():
        if types:
            connection.execute(
                sa.text('UPDATE domain SET webhook_events = :types WHERE id = :id'),
                {'types': ' '.join(sorted(types)), 'id': domain_id},
            )


def downgrade():
    with op.batch_alter_table('domain', schema=None) as batch_op:
        batch_op.drop_column('webhook_events')
