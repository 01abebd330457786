"""checkpoint_events: the checkpoint saves and loads jobs marked (issue 17)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 22:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'checkpoint_events',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('idempotency_key', sa.String(length=64), nullable=False),
        sa.Column('cluster', sa.String(length=64), nullable=False),
        sa.Column('node', sa.String(length=255), nullable=False),
        sa.Column('job_id', sa.BigInteger(), nullable=False),
        sa.Column('restart_count', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=8), nullable=False),
        sa.Column('time', sa.DateTime(timezone=True), nullable=False),
        sa.Column('seconds', sa.Float(), nullable=True),
        sa.Column('source', sa.String(length=32), nullable=False),
        sa.Column('nbytes', sa.BigInteger(), nullable=True),
        sa.Column('bytes_source', sa.String(length=16), nullable=True),
        sa.Column('rpcs', sa.BigInteger(), nullable=True),
        sa.Column('queue_ms_per_op', sa.Float(), nullable=True),
        sa.Column('rtt_ms_per_op', sa.Float(), nullable=True),
        sa.Column('gbytes_per_s', sa.Float(), nullable=True),
        sa.Column('utilisation', sa.Float(), nullable=True),
        sa.Column('mountpoint', sa.Text(), nullable=True),
        sa.Column('details', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('idempotency_key'),
    )
    with op.batch_alter_table('checkpoint_events', schema=None) as batch_op:
        batch_op.create_index('ix_checkpoint_job', ['cluster', 'job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_checkpoint_events_node'), ['node'], unique=False)
        batch_op.create_index(batch_op.f('ix_checkpoint_events_time'), ['time'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('checkpoint_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_checkpoint_events_time'))
        batch_op.drop_index(batch_op.f('ix_checkpoint_events_node'))
        batch_op.drop_index('ix_checkpoint_job')
    op.drop_table('checkpoint_events')
