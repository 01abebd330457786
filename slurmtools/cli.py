"""The `slurmtools` command. Subcommands import their heavy modules lazily so hooks stay fast."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, NoReturn

import click

from slurmtools import __version__

log = logging.getLogger("slurmtools")


def emit_json(data: Any) -> None:
    """Print one JSON document and nothing else on stdout."""
    click.echo(json.dumps(data, indent=None, sort_keys=False, default=str))


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"slurmtools: error: {message}", err=True)
    sys.exit(code)


def _config() -> Any:
    from slurmtools import config

    try:
        return config.get()
    except config.ConfigError as exc:
        fail(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="slurmtools")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Health gates, fault diagnosis, a failure ledger and automatic requeue for Slurm GPU clusters."""
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="slurmtools: %(levelname)s: %(message)s")


# ---------------------------------------------------------------------------------- config
@main.group("config")
def config_group() -> None:
    """Show or check the configuration."""


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def config_show(as_json: bool) -> None:
    """Print the effective configuration (defaults + operator file + environment)."""
    cfg = _config()
    if as_json:
        emit_json({"sources": cfg.sources, "config": cfg.data})
        return
    click.echo("# sources: " + ", ".join(cfg.sources))
    for section, values in cfg.data.items():
        click.echo(f"\n[{section}]")
        for key, value in values.items():
            click.echo(f"{key} = {json.dumps(value)}")


@config_group.command("check")
@click.argument("path", required=False)
def config_check(path: str | None) -> None:
    """Validate an operator file (default: SLURMTOOLS_CONFIG or /etc/slurmtools/slurmtools.toml)."""
    from slurmtools import config

    target = path or config.config_path()
    try:
        config.check_file(target)
    except config.ConfigError as exc:
        fail(str(exc), 1)
    click.echo(f"{target}: ok")


# ----------------------------------------------------------------------------------- nodes
@main.command("nodes")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def nodes_cmd(as_json: bool) -> None:
    """Each node with its Slurm state, flags and reason."""
    from slurmtools.slurm import SlurmError, get_client

    try:
        nodes = get_client(_config()).nodes()
    except SlurmError as exc:
        fail(str(exc))
    if as_json:
        emit_json([n.to_dict() for n in nodes])
        return
    rows = [("NODE", "STATE", "FLAGS", "REASON")]
    for n in nodes:
        reason = n.reason or ""
        if n.reason_user:
            reason += f" [{n.reason_user}@{n.reason_time.isoformat() if n.reason_time else '?'}]"
        rows.append((n.name, n.state, ",".join(n.flags) or "-", reason))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        click.echo("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])


# ------------------------------------------------------------------------------------- lab
@main.group("lab")
def lab_group() -> None:
    """A real 4-node Slurm cluster on this machine, for tests and demos."""


def _lab() -> Any:
    from slurmtools.lab import Lab

    return Lab(say=lambda msg: click.echo(f"lab: {msg}", err=True))


@lab_group.command("up")
@click.option("--no-install", is_flag=True, help="Do not install missing Debian packages.")
def lab_up(no_install: bool) -> None:
    """Start (or complete) the lab: munge, MariaDB, slurmdbd, slurmctld, n1..n4, PostgreSQL."""
    from slurmtools.lab import LabError

    try:
        _lab().up(install=not no_install)
    except LabError as exc:
        fail(str(exc), 1)


@lab_group.command("down")
@click.option("--purge", is_flag=True, help="Also delete the lab's state directory.")
def lab_down(purge: bool) -> None:
    """Stop what the lab started (by PID file only)."""
    _lab().down(purge=purge)


@lab_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def lab_status(as_json: bool) -> None:
    """Each lab daemon and whether it runs. Exit 1 if any is down."""
    rows = _lab().status()
    if as_json:
        emit_json(rows)
    else:
        for row in rows:
            state = f"running (pid {row['pid']})" if row["running"] else "stopped"
            click.echo(f"{row['daemon']:<12} {state}")
    sys.exit(0 if all(r["running"] for r in rows) else 1)


@lab_group.command("env")
def lab_env() -> None:
    """Shell exports for using the lab: eval "$(slurmtools lab env)"."""
    import shlex

    for key, value in _lab().env().items():
        click.echo(f"export {key}={shlex.quote(value)}")


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
        click.echo(f"injected {fault} on {node}: {result.get('line', '')}")


# ------------------------------------------------------------------------------------ hook
@main.command("hook", hidden=False)
def hook_cmd() -> None:
    """Entry point for prolog.d/ and epilog.d/: dispatches on SLURM_SCRIPT_CONTEXT.

    An internal error of ours is logged and exits 0: it must never drain a node.
    """
    context = os.environ.get("SLURM_SCRIPT_CONTEXT", "")
    try:
        from slurmtools import hooks

        sys.exit(hooks.run(context))
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - our bug must not become a drained node
        click.echo(f"slurmtools: internal error in {context or 'hook'}: {exc!r}", err=True)
        sys.exit(0)


def _register() -> None:
    from slurmtools.ledger.cli import ledger_group

    main.add_command(ledger_group)


_register()
