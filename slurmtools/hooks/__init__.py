"""The programs Slurm runs, on every node before and after every job: `runner` (the one entry point,
`slurmtools-hook`, dispatching on SLURM_SCRIPT_CONTEXT), `prolog` (health gate, HealthCheckProgram),
`epilog` (diagnosis of the job's window) and the slurmctld epilog (enqueue for the controller).

They read the environment Slurm gives once, into a `context.JobContext` passed inward, the node (through
checks/ and diagnosis/) and the configuration; they write spool files for the ledger, the kernel-log marker,
the gate's status cache and the controller's queue. Thin and lean: no click, no SQLAlchemy on the healthy path,
no Slurm call unless a node must drain.
"""


def main(argv: list[str] | None = None) -> int:
    """`slurmtools-hook` as installed before the hooks had a folder (`from slurmtools.hooks import main`)."""
    from slurmtools.hooks.runner import main as run

    return run(argv)
