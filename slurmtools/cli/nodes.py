"""`slurmtools nodes`: each node's Slurm state and reason, and the circuit breaker."""

from __future__ import annotations

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config


@click.command("nodes")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def nodes_cmd(as_json: bool) -> None:
    """Each node with its Slurm state, flags and reason, and the circuit breaker's state."""
    from slurmtools import drain
    from slurmtools.slurm import SlurmError, get_client

    cfg = get_config()
    try:
        slurm = get_client(cfg)
        nodes = slurm.nodes()
        breaker = drain.breaker_status(cfg, slurm)
    except SlurmError as exc:
        fail(str(exc))
    if as_json:
        emit_json([n.to_dict() for n in nodes])
        return
    if breaker["open"]:
        echo(f"CIRCUIT BREAKER OPEN: {breaker['detail']}", err=True)
    rows = [("NODE", "STATE", "FLAGS", "REASON")]
    for n in nodes:
        reason = n.reason or ""
        if n.reason_user:
            reason += f" [{n.reason_user}@{n.reason_time.isoformat() if n.reason_time else '?'}]"
        rows.append((n.name, n.state, ",".join(n.flags) or "-", reason))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        echo("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])
