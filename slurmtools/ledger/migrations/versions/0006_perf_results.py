"""perf_results: every GPU's fail-slow probe result (issue 33)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 19:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'perf_results',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('idempotency_key', sa.String(length=64), nullable=False),
        sa.Column('cluster', sa.String(length=64), nullable=False),
        sa.Column('node', sa.String(length=255), nullable=False),
        sa.Column('time', sa.DateTime(timezone=True), nullable=False),
        sa.Column('profile', sa.String(length=16), nullable=False),
        sa.Column('gpu_index', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(length=96), nullable=False),
        sa.Column('model', sa.String(length=96), nullable=False),
        sa.Column('pci_bus_id', sa.String(length=32), nullable=True),
        sa.Column('status', sa.String(length=8), nullable=False),
        sa.Column('d2d_gbps', sa.Float(), nullable=True),
        sa.Column('h2d_gbps', sa.Float(), nullable=True),
        sa.Column('d2h_gbps', sa.Float(), nullable=True),
        sa.Column('fp32_tflops', sa.Float(), nullable=True),
        sa.Column('sm_mhz_min', sa.Integer(), nullable=True),
        sa.Column('power_w_max', sa.Integer(), nullable=True),
        sa.Column('clocks_event_reasons', sa.BigInteger(), nullable=True),
        sa.Column('seconds', sa.Float(), nullable=True),
        sa.Column('details', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('idempotency_key'),
    )
    with op.batch_alter_table('perf_results', schema=None) as batch_op:
        batch_op.create_index('ix_perf_gpu_time', ['cluster', 'uuid', 'time'], unique=False)
        batch_op.create_index('ix_perf_model_time', ['model', 'time'], unique=False)
        batch_op.create_index(batch_op.f('ix_perf_results_node'), ['node'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('perf_results', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_perf_results_node'))
        batch_op.drop_index('ix_perf_model_time')
        batch_op.drop_index('ix_perf_gpu_time')
    op.drop_table('perf_results')
