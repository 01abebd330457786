"""What Slurm's hooks run. Each returns the hook's exit code; see prolog.d/ and epilog.d/."""

from __future__ import annotations

import os
from collections.abc import Callable

from slurmtools import config


def run(context: str) -> int:
    cfg = config.get()
    if not cfg.get("general.enabled"):
        return 0
    if "slurmtools=off" in os.environ.get("SLURM_JOB_COMMENT", ""):
        return 0
    handler = HANDLERS.get(context)
    return handler() if handler else 0


def prolog_slurmd() -> int:
    from slurmtools.diagnosis import sources

    try:
        sources.record_job_start(config.get(), os.environ)
    except OSError as exc:  # without a marker the epilog reads the log's tail instead
        print(f"slurmtools prolog: cannot record the kernel-log marker: {exc}")
    return 0


def epilog_slurmd() -> int:
    from slurmtools import epilog

    return epilog.run()


#: SLURM_SCRIPT_CONTEXT -> handler.
HANDLERS: dict[str, Callable[[], int]] = {"prolog_slurmd": prolog_slurmd, "epilog_slurmd": epilog_slurmd}
