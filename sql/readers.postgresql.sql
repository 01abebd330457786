-- Read access to the ledger for `slurmtools status` and `slurmtools why` (docs/sbatch.md), for a role
-- your researchers log in as (or a group role they are members of). Run as the ledger's owner:
--
--   psql -v readers=researchers -f sql/readers.postgresql.sql slurmtools
--
-- Not granted: retry_chains.details (each submission's command line, working directory, environment and
-- script copy: its user's business), the exclusions, gate runs and node events (the admins' tools).
GRANT SELECT ON alembic_version, job_attempts, findings, controller_decisions, node_state_changes, chain_jobs
    TO :"readers";
GRANT SELECT (id, idempotency_key, cluster, root_job_id, "user", created, max_retries, retry_on, status,
              retries_used)
    ON retry_chains TO :"readers";
