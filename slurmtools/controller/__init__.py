"""Stage 4 of the loop: the requeue controller. Its drains and resumes go through `slurmtools.drain`.

* `exclusions` - which nodes are kept out of jobs, why and until when; publishing them for the plugins;
* `queue`      - EpilogSlurmctld's inbox (one durable file per ended attempt; the hook only enqueues);
* `policy`     - classify an ended attempt and decide whether and where to retry it (pure rules);
* `engine`     - one pass, joining `ingest` (submission records), `decide`, `act` (requeue), `resubmit`,
                 `evacuate` and `recovery` (lemons, return to service), all over `base`.

Reads the queue, the submission drop directory, the ledger and Slurm; writes decisions, chains and
exclusions to the ledger (through the spool), and requeues, resubmits, drains and resumes through Slurm.
"""
