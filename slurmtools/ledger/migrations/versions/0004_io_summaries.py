"""io_summaries: one job's NFS I/O per node and mount (issue 17)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 22:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'io_summaries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('idempotency_key', sa.String(length=64), nullable=False),
        sa.Column('cluster', sa.String(length=64), nullable=False),
        sa.Column('node', sa.String(length=255), nullable=False),
        sa.Column('job_id', sa.BigInteger(), nullable=False),
        sa.Column('restart_count', sa.Integer(), nullable=False),
        sa.Column('time', sa.DateTime(timezone=True), nullable=False),
        sa.Column('mountpoint', sa.Text(), nullable=False),
        sa.Column('device', sa.Text(), nullable=False),
        sa.Column('seconds', sa.Float(), nullable=False),
        sa.Column('read_bytes', sa.BigInteger(), nullable=False),
        sa.Column('write_bytes', sa.BigInteger(), nullable=False),
        sa.Column('read_ops', sa.BigInteger(), nullable=False),
        sa.Column('write_ops', sa.BigInteger(), nullable=False),
        sa.Column('rtt_ms', sa.Float(), nullable=True),
        sa.Column('queue_ms', sa.Float(), nullable=True),
        sa.Column('mean_backlog', sa.Float(), nullable=True),
        sa.Column('retransmissions', sa.Integer(), nullable=False),
        sa.Column('limit', sa.String(length=24), nullable=True),
        sa.Column('details', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('idempotency_key'),
    )
    with op.batch_alter_table('io_summaries', schema=None) as batch_op:
        batch_op.create_index('ix_io_job', ['cluster', 'job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_io_summaries_node'), ['node'], unique=False)
        batch_op.create_index(batch_op.f('ix_io_summaries_time'), ['time'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('io_summaries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_io_summaries_time'))
        batch_op.drop_index(batch_op.f('ix_io_summaries_node'))
        batch_op.drop_index('ix_io_job')
    op.drop_table('io_summaries')
