"""`slurmtools install`: put the loop's long-running services in place (docs/install.md)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from slurmtools.cli.common import echo, emit_json, fail

UNITS = {"controller": "slurmtools-controller.service", "exporter": "slurmtools-exporter.service",
         "detect": "slurmtools-detect.service", "stalls": "slurmtools-stalls.service",
         "stalls-sampler": "slurmtools-stalls-sampler.service"}


@click.group("install")
def install_group() -> None:
    """Install what a site runs besides the hooks: the systemd units of the services."""


def _executable() -> str:
    """The `slurmtools` this process was started as (its virtual environment's, not the first on PATH)."""
    beside = Path(sys.executable).parent / "slurmtools"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("slurmtools")
    if found:
        return str(Path(found).resolve())
    return f"{sys.executable} -m slurmtools"


def render(name: str, *, exe: str, config: str | None, interval: str = "5m") -> str:
    from importlib import resources

    import jinja2

    text = resources.files("slurmtools").joinpath(f"data/systemd/{UNITS[name]}.j2").read_text()
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined, autoescape=False)
    return env.from_string(text).render(exe=exe, config=config, interval=interval)


@install_group.command("units")
@click.option("--dest", default="/etc/systemd/system", show_default=True, type=click.Path(file_okay=False),
              help="Where to write the unit files.")
@click.option("--only", "only", multiple=True, type=click.Choice(sorted(UNITS)),
              help="Only this service (repeatable; default: all).")
@click.option("--interval", default="5m", show_default=True, help="detect run's interval.")
@click.option("--print", "to_stdout", is_flag=True, help="Print the units instead of writing them.")
@click.option("--json", "as_json", is_flag=True, help="Say what was written as JSON.")
def install_units(dest: str, only: tuple[str, ...], interval: str, to_stdout: bool, as_json: bool) -> None:
    """Write systemd units for the controller, the exporter and the detector (root-owned, mode 0644).

    The units run this installation's `slurmtools` with the configuration file this command was given
    (SLURMTOOLS_CONFIG), so what they run is what was tested here. Then: systemctl daemon-reload; systemctl
    enable --now slurmtools-controller (on the slurmctld primary and backup hosts) and the others where wanted."""
    from slurmtools import fsutil
    from slurmtools.timeutil import parse_duration

    try:
        parse_duration(interval)
    except ValueError as exc:
        fail(f"--interval: {exc}")
    exe = _executable()
    config = os.environ.get("SLURMTOOLS_CONFIG") or None
    if config:
        config = str(Path(config).resolve())
    names = list(only) or sorted(UNITS)
    texts = {UNITS[n]: render(n, exe=exe, config=config, interval=interval) for n in names}
    if to_stdout:
        for fname, text in texts.items():
            echo(f"# --- {fname}\n{text}")
        return
    target = Path(dest)
    if not target.is_dir():
        fail(f"--dest {dest}: not a directory")
    written = []
    for fname, text in texts.items():
        path = target / fname
        try:
            fsutil.write_atomic(str(path), text, mode=0o644, durable=True)
        except OSError as exc:
            fail(f"cannot write {path}: {exc}", 1)
        written.append(str(path))
    if as_json:
        emit_json({"written": written, "exe": exe, "config": config})
        return
    for p in written:
        echo(f"wrote {p}")
    echo("next: systemctl daemon-reload && systemctl enable --now "
         + " ".join(Path(p).name for p in written))


#: slurm.conf's lines for the hooks (docs/install.md, section 4), before the health-check lines.
SLURM_CONF = """\
Prolog=/usr/local/share/slurmtools/prolog.d/50-slurmtools
Epilog=/usr/local/share/slurmtools/epilog.d/50-slurmtools
EpilogSlurmctld=/usr/local/share/slurmtools/epilog.d/50-slurmtools
PrologFlags=Alloc
SchedulerParameters=nohold_on_prolog_fail
PrologEpilogTimeout=60
JobRequeue=0                 # jobs are requeued by the controller, for the jobs that asked"""


@install_group.command("slurm-conf")
@click.option("--interval", default=300, show_default=True, type=click.IntRange(1, 65535),
              help="HealthCheckInterval, seconds.")
def install_slurm_conf(interval: int) -> None:
    """Print the slurm.conf lines for this cluster's running Slurm: the hooks, and the health-check settings it
    supports (HealthCheckTimeout, HealthCheckNodeState=START_ONLY), detected from it, not from its version."""
    from slurmtools.cli.common import get_config
    from slurmtools.slurm import SlurmError, features, get_client
    from slurmtools.slurm.cli_backend import CliSlurm

    cfg = get_config()
    try:
        client = get_client(cfg)
        if not isinstance(client, CliSlurm):      # both backends are; `scontrol show config` is the CLI's
            fail("cannot read Slurm's configuration with this backend")
        feats = features.detect(features.show_config(client))
    except (SlurmError, OSError) as exc:
        fail(f"cannot read Slurm's configuration: {exc}"[:400])
    budget = features.health_check_budget(len(cfg.checks.health), cfg.checks.timeout, cfg.slurm.timeout)
    echo(SLURM_CONF)
    echo("\n".join(features.slurm_conf_lines(feats, hook="/usr/local/bin/slurmtools-hook", interval=interval,
                                             budget=budget)))
