"""Alembic environment: run with the connection slurmtools.ledger.schema passes in."""

from __future__ import annotations

from alembic import context

from slurmtools.ledger.models import Base

config = context.config
target_metadata = Base.metadata

connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `slurmtools ledger init` (slurmtools.ledger.schema.upgrade)")
context.configure(connection=connection, target_metadata=target_metadata,
                  render_as_batch=connection.dialect.name == "sqlite", compare_type=True)
with context.begin_transaction():
    context.run_migrations()
