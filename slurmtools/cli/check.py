"""`slurmtools check`, `slurmtools snapshot record` and `slurmtools hook`: the health checks by hand, and
the hook entry point under the CLI."""

from __future__ import annotations

import json
import sys

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config


@click.command("hook", hidden=False)
@click.argument("context", required=False)
def hook_cmd(context: str | None) -> None:
    """Entry point for prolog.d/, epilog.d/ and HealthCheckProgram (same as `slurmtools-hook`).

    CONTEXT defaults to SLURM_SCRIPT_CONTEXT; `healthcheck` for HealthCheckProgram. An internal error of
    ours is logged and exits 0: it must never drain a node.
    """
    from slurmtools.hooks import runner as hooks

    sys.exit(hooks.main([context] if context else []))

@click.command("check")
@click.option("--profile", type=click.Choice(["prolog", "epilog", "health", "deep"]), default="prolog",
              show_default=True, help="Which checks to run (config: checks.<profile>).")
@click.option("--replay", type=click.Path(dir_okay=False), help="Read this snapshot instead of the machine.")
@click.option("--node", help="Judge as this node (its hardware profile; default: this host).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of results.")
def check_cmd(profile: str, replay: str | None, node: str | None, as_json: bool) -> None:
    """Run the health checks here and report; changes nothing (no drain, no ledger record).

    Exit status: 0 healthy (ok or warn), 1 failed, 2 unknown or an error of ours.
    """
    from slurmtools import config
    from slurmtools.checks import runner
    from slurmtools.checks.system import SnapshotError

    cfg = get_config()
    try:
        report = runner.run(cfg, profile, node=node or config.this_node(), replay=replay,
                            persist=not replay)
    except (SnapshotError, config.ConfigError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        emit_json([r.to_dict() for r in report.results])
    else:
        for r in report.results:
            echo(f"{r.status.upper():<8} {r.check:<12} {r.duration_ms:7.1f} ms  {r.reason}")
        echo(f"verdict: {report.verdict} ({report.duration_ms:.1f} ms)")
    sys.exit(report.exit_code)


@click.group("snapshot")
def snapshot_group() -> None:
    """Record what the health checks read on this node, for replay (`check --replay`, node.replay)."""


@snapshot_group.command("record")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--interval", type=float, default=0.0, show_default=True,
              help="Read error counters twice, this many seconds apart (replays then judge their increase).")
def snapshot_record(path: str, interval: float) -> None:
    """Write a snapshot of this node's NVML values and sysfs/procfs files to PATH (JSON)."""
    from slurmtools.checks import snapshot

    data = snapshot.record(interval=interval)
    from slurmtools.fsutil import write_atomic

    try:
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True))
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror}")
    gpus = len((data.get("nvml") or {}).get("devices") or [])
    echo(f"{path}: {gpus} GPUs, {len(data['files'])} files"
         + (f", NVML error {data['nvml']['errors']}" if (data.get("nvml") or {}).get("errors") else ""))
