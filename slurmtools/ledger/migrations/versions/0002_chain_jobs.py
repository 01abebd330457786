"""chain_jobs: job ids that continue a retry chain after a resubmission

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('chain_jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('cluster', sa.String(length=64), nullable=False),
    sa.Column('job_id', sa.BigInteger(), nullable=False),
    sa.Column('chain_id', sa.Integer(), nullable=False),
    sa.Column('created', sa.DateTime(timezone=True), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['chain_id'], ['retry_chains.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('cluster', 'job_id')
    )
    with op.batch_alter_table('chain_jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_chain_jobs_chain_id'), ['chain_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('chain_jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_chain_jobs_chain_id'))

    op.drop_table('chain_jobs')
