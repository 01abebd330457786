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


#: SLURM_SCRIPT_CONTEXT -> handler. Later stages register prolog_slurmd, epilog_slurmd, epilog_slurmctld.
HANDLERS: dict[str, Callable[[], int]] = {}
