"""job_attempts.sluid, findings.sluid: the run's SLURM_JOB_SLUID where Slurm gives one (25.11+, issue 35)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 23:55:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('job_attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sluid', sa.String(length=16), nullable=True))
        batch_op.create_index('ix_job_attempts_sluid', ['cluster', 'sluid'], unique=False)
    with op.batch_alter_table('findings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sluid', sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('findings', schema=None) as batch_op:
        batch_op.drop_column('sluid')
    with op.batch_alter_table('job_attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_job_attempts_sluid')
        batch_op.drop_column('sluid')
