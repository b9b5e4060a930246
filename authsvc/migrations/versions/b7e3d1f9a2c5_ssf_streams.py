"""ssf_stream, ssf_subject, ssf_waiting: the Shared Signals transmitter's streams, subjects and waiting SETs

Revision ID: b7e3d1f9a2c5
Revises: b8e3d1f6a2c4
Create Date: 2026-12-02 15:50:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b7e3d1f9a2c5'
down_revision = 'b8e3d1f6a2c4'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'ssf_stream',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('domain_id', sa.Integer(), nullable=False),
        sa.Column('application_id', sa.Integer(), nullable=False),
        sa.Column('issuer', sa.String(length=2000), nullable=False),
        sa.Column('audience', sa.String(length=2000), nullable=False),
        sa.Column('method', sa.String(length=40), nullable=False),
        sa.Column('endpoint_url', sa.String(length=2000), nullable=True),
        sa.Column('authorization_encrypted', sa.Text(), nullable=True),
        sa.Column('events_requested', sa.Text(), nullable=False),
        sa.Column('description', sa.String(length=500), nullable=True),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('reason', sa.String(length=500), nullable=True),
        sa.Column('verified_at', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domain.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['application_id'], ['application.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('application_id'),
    )
    with op.batch_alter_table('ssf_stream', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ssf_stream_domain_id'), ['domain_id'], unique=False)
    op.create_table(
        'ssf_subject',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('stream_id', sa.String(length=32), nullable=False),
        sa.Column('application_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('included', sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(['stream_id'], ['ssf_stream.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['application_id'], ['application.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('stream_id', 'user_id', name='uq_ssf_subject_stream_user'),
    )
    with op.batch_alter_table('ssf_subject', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ssf_subject_application_id'), ['application_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_ssf_subject_user_id'), ['user_id'], unique=False)
    op.create_table(
        'ssf_waiting',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('stream_id', sa.String(length=32), nullable=False),
        sa.Column('application_id', sa.Integer(), nullable=False),
        sa.Column('jti', sa.String(length=64), nullable=False),
        sa.Column('claims_encrypted', sa.Text(), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['stream_id'], ['ssf_stream.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['application_id'], ['application.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('stream_id', 'jti', name='uq_ssf_waiting_stream_jti'),
    )
    with op.batch_alter_table('ssf_waiting', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ssf_waiting_application_id'), ['application_id'], unique=False)
        batch_op.create_index('ix_ssf_waiting_stream', ['stream_id', 'id'], unique=False)


def downgrade():
    with op.batch_alter_table('ssf_waiting', schema=None) as batch_op:
        batch_op.drop_index('ix_ssf_waiting_stream')
        batch_op.drop_index(batch_op.f('ix_ssf_waiting_application_id'))
    op.drop_table('ssf_waiting')
    with op.batch_alter_table('ssf_subject', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ssf_subject_user_id'))
        batch_op.drop_index(batch_op.f('ix_ssf_subject_application_id'))
    op.drop_table('ssf_subject')
    with op.batch_alter_table('ssf_stream', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ssf_stream_domain_id'))
    op.drop_table('ssf_stream')
