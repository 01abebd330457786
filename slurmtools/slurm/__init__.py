"""Slurm access: one small interface (`Slurm`) with a CLI backend (the tested default) and a pyslurm backend.
Reads and changes nodes and jobs through Slurm's commands; every other stage talks to Slurm through it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slurmtools.slurm.base import Slurm
from slurmtools.slurm.cli_backend import CliSlurm
from slurmtools.slurm.parse import collect, expand
from slurmtools.slurm.types import (
    ExitStatus,
    JobInfo,
    JobRecord,
    NodeEvent,
    NodeInfo,
    SlurmCommandError,
    SlurmError,
    SlurmNotFound,
    SlurmParseError,
    SlurmTimeout,
)

if TYPE_CHECKING:
    from slurmtools.config import Config

__all__ = [
    "CliSlurm", "ExitStatus", "JobInfo", "JobRecord", "NodeEvent", "NodeInfo", "Slurm", "SlurmCommandError",
    "SlurmError", "SlurmNotFound", "SlurmParseError", "SlurmTimeout", "collect", "expand", "get_client",
]

log = logging.getLogger(__name__)


def get_client(cfg: Config | None = None) -> Slurm:
    """The configured backend. `auto`: pyslurm only where it imports and matches Slurm."""
    if cfg is None:
        from slurmtools import config

        cfg = config.get()
    backend = cfg.slurm.backend
    cli = CliSlurm(bin_dir=cfg.slurm.bin_dir, timeout=cfg.slurm.timeout)
    if backend == "cli":
        return cli
    from slurmtools.slurm import pyslurm_backend

    def version() -> str:
        try:
            return cli.version()
        except SlurmError as exc:
            return f"unknown ({exc})"

    why = pyslurm_backend.unusable_reason(version)
    if why is None:
        return pyslurm_backend.PyslurmSlurm(bin_dir=cli.bin_dir, timeout=cli.timeout)
    if backend == "pyslurm":
        raise SlurmError(f"slurm.backend = pyslurm, but {why}")
    log.debug("using the CLI Slurm backend: %s", why)
    return cli
