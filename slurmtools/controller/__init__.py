"""Stage 4 of the loop: the requeue controller.

* `queue`  - EpilogSlurmctld's inbox (one durable file per ended attempt; the hook only enqueues);
* `policy` - classify an ended attempt and decide whether and where to retry it (pure rules);
* `engine` - gather evidence from the ledger and Slurm, act (requeuehold, exclude, release), verify,
             audit, follow retries until they run, flag lemon nodes, return nodes to service;
* `cli`    - `slurmtools controller run|once|status`.
"""
