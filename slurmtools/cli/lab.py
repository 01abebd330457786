"""`slurmtools lab up|down|status|env|inject`: the local multi-node Slurm cluster."""

from __future__ import annotations

import sys
from typing import Any

import click

from slurmtools.cli.common import echo, emit_json, fail


@click.group("lab")
def lab_group() -> None:
    """A real 4-node Slurm cluster on this machine, for tests and demos."""


def _lab(release: str | None = None, source: str | None = None) -> Any:
    from slurmtools.lab import Lab, LabError

    try:
        return Lab.for_release(release, say=lambda msg: echo(f"lab: {msg}", err=True), source=source)
    except LabError as exc:
        fail(str(exc), 2)


SLURM = click.option("--slurm", "release", metavar="RELEASE",
                     help="The lab of this Slurm release: the host's own (22.05 on Debian 12, the default) or "
                          "24.11 / 26.05 in a Debian root made with debootstrap, 25.11 built from source in "
                          "one (default: $SLURMTOOLS_LAB_SLURM).")


@lab_group.command("up")
@click.option("--no-install", is_flag=True, help="Do not install missing Debian packages.")
@SLURM
@click.option("--slurm-source", "source", metavar="PATH", type=click.Path(dir_okay=False),
              help="The Slurm source tarball to build a release Debian does not package (25.11) from "
                   "(default: the vendored one, else SchedMD's, checked against the sha256 slurmtools keeps).")
def lab_up(no_install: bool, release: str | None, source: str | None) -> None:
    """Start (or complete) the lab: munge, MariaDB, slurmdbd, slurmctld, n1..n4, PostgreSQL."""
    from slurmtools.lab import LabError

    try:
        _lab(release, source).up(install=not no_install)
    except LabError as exc:
        fail(str(exc), 1)


@lab_group.command("down")
@click.option("--purge", is_flag=True, help="Also delete the lab's state directory.")
@SLURM
def lab_down(purge: bool, release: str | None) -> None:
    """Stop what the lab started (by PID file only)."""
    _lab(release).down(purge=purge)


@lab_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@SLURM
def lab_status(as_json: bool, release: str | None) -> None:
    """Each lab daemon and whether it runs. Exit 1 if any is down."""
    lab = _lab(release)
    rows = lab.status()
    if as_json:
        emit_json(rows)
    else:
        echo(f"Slurm {lab.release}" + (f" (in {lab.fs})" if lab.fs else " (the host's packages)"))
        for row in rows:
            state = f"running (pid {row['pid']})" if row["running"] else "stopped"
            echo(f"{row['daemon']:<12} {state}")
    sys.exit(0 if all(r["running"] for r in rows) else 1)


@lab_group.command("env")
@SLURM
def lab_env(release: str | None) -> None:
    """Shell exports for using the lab: eval "$(slurmtools lab env)"."""
    import shlex

    for key, value in _lab(release).env().items():
        echo(f"export {key}={shlex.quote(value)}")


@lab_group.command("inject")
@click.argument("node")
@click.argument("fault")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def lab_inject(node: str, fault: str, as_json: bool) -> None:
    """Inject FAULT on lab NODE (e.g. `slurmtools lab inject n2 xid79`)."""
    from slurmtools.lab import LabError

    try:
        result = _lab().inject(node, fault)
    except LabError as exc:
        fail(str(exc))
    if as_json:
        emit_json(result)
    else:
        echo(f"injected {fault} on {node}: {result.get('line', '')}")
