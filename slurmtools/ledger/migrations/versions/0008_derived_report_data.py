"""Data the ledger keeps as it writes, for the report at scale (issue 36): interrupted_attempts and
job_attempts.interrupted, failed_job_names and job_attempts.name_failed (ledger/derived.py), filled here from the
rows already stored by the same rules; and a partial index of the fallback's findings (action investigate)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 02:05:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

# The rules of ledger/derived.py at this revision, frozen here as a migration must be.
BACKFILL = [
    """INSERT INTO interrupted_attempts (cluster, job_id, restart_count)
       SELECT cluster, job_id, restart_count FROM controller_decisions WHERE classification = 'node_fault'
       UNION
       SELECT cluster, job_id, restart_count FROM findings
       WHERE job_id IS NOT NULL AND restart_count IS NOT NULL
         AND category IN ('hardware', 'driver', 'network', 'filesystem')
         AND trust <> 'job' AND severity IN ('error', 'critical')""",
    """INSERT INTO failed_job_names (cluster, "user", name)
       SELECT DISTINCT cluster, "user", name FROM job_attempts
       WHERE "user" IS NOT NULL AND name IS NOT NULL
         AND state IN ('FAILED', 'NODE_FAIL', 'TIMEOUT', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE')""",
    """UPDATE job_attempts SET interrupted = true WHERE EXISTS (
           SELECT 1 FROM interrupted_attempts i WHERE i.cluster = job_attempts.cluster
             AND i.job_id = job_attempts.job_id AND i.restart_count = job_attempts.restart_count)""",
    """UPDATE job_attempts SET name_failed = true WHERE EXISTS (
           SELECT 1 FROM failed_job_names f WHERE f.cluster = job_attempts.cluster
             AND f."user" = job_attempts."user" AND f.name = job_attempts.name)""",
]


def upgrade() -> None:
    op.create_table(
        'interrupted_attempts',
        sa.Column('cluster', sa.String(length=64), nullable=False),
        sa.Column('job_id', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('restart_count', sa.Integer(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint('cluster', 'job_id', 'restart_count'),
    )
    op.create_table(
        'failed_job_names',
        sa.Column('cluster', sa.String(length=64), nullable=False),
        sa.Column('user', sa.String(length=64), nullable=False),
        sa.Column('name', sa.String(length=256), nullable=False),
        sa.PrimaryKeyConstraint('cluster', 'user', 'name'),
    )
    # plain ALTER TABLE ... ADD COLUMN on both (a batch copy of job_attempts is refused by findings' foreign key)
    op.add_column('job_attempts', sa.Column('interrupted', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column('job_attempts', sa.Column('name_failed', sa.Boolean(), server_default=sa.false(), nullable=False))
    for statement in BACKFILL:
        op.execute(statement)
    where = sa.text("action = 'investigate'")
    op.create_index('ix_findings_investigate', 'findings', ['cluster', 'time'], unique=False,
                    postgresql_where=where, sqlite_where=where)


def downgrade() -> None:
    op.drop_index('ix_findings_investigate', table_name='findings')
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+), for the same reason
    op.execute('ALTER TABLE job_attempts DROP COLUMN name_failed')
    op.execute('ALTER TABLE job_attempts DROP COLUMN interrupted')
    op.drop_table('failed_job_names')
    op.drop_table('interrupted_attempts')
