"""The `slurmtools` command: the admin's and the researcher's interface to every stage.

One module per command group (`config`, `nodes`, `lab`, `diagnose`, `check` + `snapshot` + `hook`,
`jobs` for sbatch/status/why, `exclude`, `ledger`, `controller`, `plugins`, `report`, `exporter`, `io`,
`checkpoint`, `detect`, `install`, `doctor`, `advise`, `perf`, `stalls`), all sharing `common`
(configuration, `--json` output, one-line errors, a ledger session). This module only registers them;
nothing imports back from it. Commands import their heavy modules lazily, so `--help` stays quick.
"""

from __future__ import annotations

import logging

import click

from slurmtools import __version__
from slurmtools.cli.advise import advise_group
from slurmtools.cli.check import check_cmd, hook_cmd, snapshot_group
from slurmtools.cli.checkpoint import checkpoint_group
from slurmtools.cli.config import config_group
from slurmtools.cli.controller import controller_group
from slurmtools.cli.detect import detect_group
from slurmtools.cli.diagnose import diagnose_cmd
from slurmtools.cli.doctor import doctor_cmd
from slurmtools.cli.exclude import exclude_group
from slurmtools.cli.exporter import exporter_cmd
from slurmtools.cli.install import install_group
from slurmtools.cli.io import io_cmd
from slurmtools.cli.jobs import sbatch_cmd, status_cmd, why_cmd
from slurmtools.cli.lab import lab_group
from slurmtools.cli.ledger import ledger_group
from slurmtools.cli.nodes import nodes_cmd
from slurmtools.cli.perf import perf_group
from slurmtools.cli.plugins import plugins_group
from slurmtools.cli.report import report_cmd
from slurmtools.cli.stalls import stalls_group


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="slurmtools")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Health gates, fault diagnosis, a failure ledger and automatic requeue for Slurm GPU clusters."""
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="slurmtools: %(levelname)s: %(message)s")


for _command in (config_group, nodes_cmd, lab_group, diagnose_cmd, hook_cmd, check_cmd, snapshot_group, sbatch_cmd,
                 status_cmd, why_cmd, exclude_group, ledger_group, controller_group, plugins_group, report_cmd,
                 exporter_cmd, io_cmd, checkpoint_group, detect_group, install_group, doctor_cmd, perf_group,
                 advise_group, stalls_group):
    main.add_command(_command)
