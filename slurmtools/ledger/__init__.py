"""The failure ledger: every finding, verdict, drain, exclusion, retry and decision.

Writers never wait on the database: `spool.write()` puts the event on local disk first (write a
temporary file, fsync, rename), and `ship.flush()` moves spooled events into the database,
idempotently. This package's __init__ stays import-light: hooks import only `spool`.
"""
