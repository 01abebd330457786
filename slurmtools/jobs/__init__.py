"""The researcher's side: `sbatch` (the wrapper: exclusions merged, retries asked, a checkpoint signal,
the submission recorded for the controller), `marker` (the retry marker every stage reads in a job's
comment) and `status` (a retry chain told from the ledger and Slurm, for `slurmtools status|why`).

Reads the published exclusions file and the ledger (chain columns only); writes one submission record
per job into the controller's drop directory.
"""
