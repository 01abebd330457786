"""Stage 3, the failure ledger: every finding, verdict, drain, exclusion, retry and decision (SQLAlchemy models,
Alembic migrations; SQLite by default, PostgreSQL at scale), the imports from sacct and traces, and the
queries the other stages read (`chains`). Reads spool files; writes the database.

Writers never wait on the database: `spool.write()` puts the event on local disk first (write a
temporary file, fsync, rename), and `ship.flush()` moves spooled events into the database,
idempotently. This package's __init__ stays import-light: hooks import only `spool`.
"""
