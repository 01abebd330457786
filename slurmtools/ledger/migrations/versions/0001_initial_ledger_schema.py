"""initial ledger schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 03:27:17.322729
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('exclusions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('node', sa.String(length=128), nullable=False),
    sa.Column('scope', sa.String(length=8), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('source', sa.String(length=64), nullable=False),
    sa.Column('start', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires', sa.DateTime(timezone=True), nullable=True),
    sa.Column('end', sa.DateTime(timezone=True), nullable=True),
    sa.Column('outcome', sa.String(length=16), nullable=True),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('exclusions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_exclusions_end'), ['end'], unique=False)
        batch_op.create_index('ix_exclusions_node', ['cluster', 'node', 'start'], unique=False)

    op.create_table('gate_pass_counts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('node', sa.String(length=128), nullable=False),
    sa.Column('profile', sa.String(length=16), nullable=False),
    sa.Column('day', sa.String(length=10), nullable=False),
    sa.Column('passes', sa.Integer(), nullable=False),
    sa.Column('total_ms', sa.BigInteger(), nullable=False),
    sa.Column('last_pass', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('cluster', 'node', 'profile', 'day')
    )
    op.create_table('gate_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('node', sa.String(length=128), nullable=False),
    sa.Column('time', sa.DateTime(timezone=True), nullable=False),
    sa.Column('job_id', sa.BigInteger(), nullable=True),
    sa.Column('profile', sa.String(length=16), nullable=False),
    sa.Column('verdict', sa.String(length=16), nullable=False),
    sa.Column('duration_ms', sa.Integer(), nullable=False),
    sa.Column('failed_checks', sa.Text(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('gate_runs', schema=None) as batch_op:
        batch_op.create_index('ix_gate_runs_node_time', ['cluster', 'node', 'time'], unique=False)
        batch_op.create_index(batch_op.f('ix_gate_runs_verdict'), ['verdict'], unique=False)

    op.create_table('meta',
    sa.Column('key', sa.String(length=128), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    op.create_table('node_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('node', sa.String(length=128), nullable=False),
    sa.Column('start', sa.DateTime(timezone=True), nullable=False),
    sa.Column('end', sa.DateTime(timezone=True), nullable=True),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('category', sa.String(length=64), nullable=True),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('source', sa.String(length=64), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('node_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_node_events_category'), ['category'], unique=False)
        batch_op.create_index('ix_node_events_node_start', ['cluster', 'node', 'start'], unique=False)

    op.create_table('node_state_changes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('node', sa.String(length=128), nullable=False),
    sa.Column('time', sa.DateTime(timezone=True), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('actor', sa.String(length=64), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('applied', sa.Boolean(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('node_state_changes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_node_state_changes_action'), ['action'], unique=False)
        batch_op.create_index('ix_node_state_node_time', ['cluster', 'node', 'time'], unique=False)

    op.create_table('nodes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('first_seen', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('cluster', 'name')
    )
    op.create_table('retry_chains',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('root_job_id', sa.BigInteger(), nullable=False),
    sa.Column('user', sa.String(length=64), nullable=True),
    sa.Column('created', sa.DateTime(timezone=True), nullable=False),
    sa.Column('max_retries', sa.Integer(), nullable=False),
    sa.Column('retry_on', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('retries_used', sa.Integer(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('retry_chains', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_retry_chains_root_job_id'), ['root_job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_retry_chains_status'), ['status'], unique=False)

    op.create_table('shipped_keys',
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('time', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('idempotency_key')
    )
    op.create_table('controller_decisions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('job_id', sa.BigInteger(), nullable=False),
    sa.Column('restart_count', sa.Integer(), nullable=False),
    sa.Column('chain_id', sa.Integer(), nullable=True),
    sa.Column('classification', sa.String(length=16), nullable=False),
    sa.Column('decision', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('excluded_nodes', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('t_ended', sa.DateTime(timezone=True), nullable=True),
    sa.Column('t_detected', sa.DateTime(timezone=True), nullable=True),
    sa.Column('t_decided', sa.DateTime(timezone=True), nullable=True),
    sa.Column('t_requeued', sa.DateTime(timezone=True), nullable=True),
    sa.Column('t_released', sa.DateTime(timezone=True), nullable=True),
    sa.Column('t_verified', sa.DateTime(timezone=True), nullable=True),
    sa.Column('t_running', sa.DateTime(timezone=True), nullable=True),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['chain_id'], ['retry_chains.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('controller_decisions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_controller_decisions_status'), ['status'], unique=False)
        batch_op.create_index('ix_decisions_job', ['cluster', 'job_id', 'restart_count'], unique=False)

    op.create_table('job_attempts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('job_id', sa.BigInteger(), nullable=False),
    sa.Column('restart_count', sa.Integer(), nullable=False),
    sa.Column('submit_time', sa.DateTime(timezone=True), nullable=True),
    sa.Column('start_time', sa.DateTime(timezone=True), nullable=True),
    sa.Column('end_time', sa.DateTime(timezone=True), nullable=True),
    sa.Column('state', sa.String(length=32), nullable=True),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('exit_signal', sa.Integer(), nullable=True),
    sa.Column('nodes', sa.Text(), nullable=True),
    sa.Column('user', sa.String(length=64), nullable=True),
    sa.Column('name', sa.String(length=256), nullable=True),
    sa.Column('partition', sa.String(length=64), nullable=True),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('chain_id', sa.Integer(), nullable=True),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['chain_id'], ['retry_chains.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('cluster', 'job_id', 'restart_count', 'submit_time'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('job_attempts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_job_attempts_chain_id'), ['chain_id'], unique=False)
        batch_op.create_index('ix_job_attempts_end', ['end_time'], unique=False)
        batch_op.create_index('ix_job_attempts_job', ['cluster', 'job_id', 'restart_count'], unique=False)
        batch_op.create_index(batch_op.f('ix_job_attempts_state'), ['state'], unique=False)

    op.create_table('findings',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('node', sa.String(length=128), nullable=True),
    sa.Column('time', sa.DateTime(timezone=True), nullable=False),
    sa.Column('job_id', sa.BigInteger(), nullable=True),
    sa.Column('restart_count', sa.Integer(), nullable=True),
    sa.Column('attempt_id', sa.Integer(), nullable=True),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('xid', sa.Integer(), nullable=True),
    sa.Column('pci', sa.String(length=32), nullable=True),
    sa.Column('gpu', sa.String(length=64), nullable=True),
    sa.Column('category', sa.String(length=16), nullable=False),
    sa.Column('severity', sa.String(length=16), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('trust', sa.String(length=16), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['attempt_id'], ['job_attempts.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('findings', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_findings_category'), ['category'], unique=False)
        batch_op.create_index('ix_findings_job', ['cluster', 'job_id', 'restart_count'], unique=False)
        batch_op.create_index(batch_op.f('ix_findings_kind'), ['kind'], unique=False)
        batch_op.create_index('ix_findings_node_time', ['cluster', 'node', 'time'], unique=False)
        batch_op.create_index(batch_op.f('ix_findings_xid'), ['xid'], unique=False)




def downgrade() -> None:

    with op.batch_alter_table('findings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_findings_xid'))
        batch_op.drop_index('ix_findings_node_time')
        batch_op.drop_index(batch_op.f('ix_findings_kind'))
        batch_op.drop_index('ix_findings_job')
        batch_op.drop_index(batch_op.f('ix_findings_category'))

    op.drop_table('findings')
    with op.batch_alter_table('job_attempts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_job_attempts_state'))
        batch_op.drop_index('ix_job_attempts_job')
        batch_op.drop_index('ix_job_attempts_end')
        batch_op.drop_index(batch_op.f('ix_job_attempts_chain_id'))

    op.drop_table('job_attempts')
    with op.batch_alter_table('controller_decisions', schema=None) as batch_op:
        batch_op.drop_index('ix_decisions_job')
        batch_op.drop_index(batch_op.f('ix_controller_decisions_status'))

    op.drop_table('controller_decisions')
    op.drop_table('shipped_keys')
    with op.batch_alter_table('retry_chains', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_retry_chains_status'))
        batch_op.drop_index(batch_op.f('ix_retry_chains_root_job_id'))

    op.drop_table('retry_chains')
    op.drop_table('nodes')
    with op.batch_alter_table('node_state_changes', schema=None) as batch_op:
        batch_op.drop_index('ix_node_state_node_time')
        batch_op.drop_index(batch_op.f('ix_node_state_changes_action'))

    op.drop_table('node_state_changes')
    with op.batch_alter_table('node_events', schema=None) as batch_op:
        batch_op.drop_index('ix_node_events_node_start')
        batch_op.drop_index(batch_op.f('ix_node_events_category'))

    op.drop_table('node_events')
    op.drop_table('meta')
    with op.batch_alter_table('gate_runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_gate_runs_verdict'))
        batch_op.drop_index('ix_gate_runs_node_time')

    op.drop_table('gate_runs')
    op.drop_table('gate_pass_counts')
    with op.batch_alter_table('exclusions', schema=None) as batch_op:
        batch_op.drop_index('ix_exclusions_node')
        batch_op.drop_index(batch_op.f('ix_exclusions_end'))

    op.drop_table('exclusions')

