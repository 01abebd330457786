"""job_attempts.node_count (GPU-hours in reports) and the index that finds manual resubmissions

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('job_attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('node_count', sa.Integer(), nullable=True))
        batch_op.create_index('ix_job_attempts_user_name', ['cluster', 'user', 'name', 'submit_time'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('job_attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_job_attempts_user_name')
        batch_op.drop_column('node_count')
