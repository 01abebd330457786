"""What Slurm's hooks run: `slurmtools-hook [CONTEXT]` (prolog.d/, epilog.d/, HealthCheckProgram).

CONTEXT defaults to SLURM_SCRIPT_CONTEXT (prolog_slurmd, epilog_slurmd); with neither (Slurm's
HealthCheckProgram passes no argument and sets no context) it is `healthcheck`. This entry point
avoids the CLI's imports (click): a prolog runs before every job.
An internal error of ours is reported on stderr (the slurmd log) and exits 0: it never drains a node.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def run(context: str) -> int:
    from slurmtools import config

    cfg = config.get()
    if not cfg.general.enabled:
        return 0
    handler = HANDLERS.get(context)
    return handler() if handler else 0


def prolog_slurmd() -> int:
    from slurmtools.hooks import prolog

    return prolog.run()


def epilog_slurmd() -> int:
    from slurmtools.hooks import epilog

    return epilog.run()


def epilog_slurmctld() -> int:
    """On the slurmctld host: queue the ended attempt for the controller, and nothing else (fast)."""
    from slurmtools import config
    from slurmtools.controller import queue

    cfg = config.get()
    queue.enqueue(cfg.controller.queue_dir, queue.item_from_env(os.environ, cfg.cluster))
    return 0


def healthcheck() -> int:
    from slurmtools.hooks import prolog

    return prolog.healthcheck()


#: SLURM_SCRIPT_CONTEXT (or the hook's argument) -> handler.
HANDLERS: dict[str, Callable[[], int]] = {"prolog_slurmd": prolog_slurmd, "epilog_slurmd": epilog_slurmd,
                                          "epilog_slurmctld": epilog_slurmctld, "healthcheck": healthcheck}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    context = argv[0] if argv else os.environ.get("SLURM_SCRIPT_CONTEXT") or "healthcheck"
    try:
        return run(context)
    except Exception as exc:  # noqa: BLE001 - ours: reported, never a drained node
        print(f"slurmtools: internal error in {context or 'hook'}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
