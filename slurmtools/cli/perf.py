"""`slurmtools perf`: the fleet's side of the fail-slow probe (docs/health-gates.md)."""

from __future__ import annotations

import click

from slurmtools.cli.common import emit_json, get_config, ledger_session


@click.group("perf")
def perf_group() -> None:
    """GPUs slower than their model's fleet: from every probe result in the ledger."""


@perf_group.command("scan")
@click.option("--record", is_flag=True, help="Publish the fleet baseline and act on slow GPUs (soft exclusion; "
              "a drain when repeated), through the safety rails.")
@click.option("--json", "as_json", is_flag=True)
def perf_scan(record: bool, as_json: bool) -> None:
    """Each GPU model's medians and the GPUs below them by more than the margins."""
    from slurmtools.controller import perf

    cfg = get_config()
    slurm = None
    if record:
        from slurmtools.slurm import get_client

        try:
            slurm = get_client(cfg)
        except Exception:  # noqa: BLE001 - no Slurm here: soft exclusions still, drains recorded as refused
            slurm = None
    with ledger_session() as s:
        out = perf.scan(cfg, s, slurm=slurm, record=record)
    if out["events"]:
        from slurmtools.cli.common import spool_and_flush
        from slurmtools.controller import exclusions

        spool_and_flush(out["events"], quiet=True)
        with ledger_session() as s:
            try:
                exclusions.publish(cfg, s)
            except OSError as exc:
                click.echo(f"slurmtools: warning: exclusions not published: {exc}", err=True)
    for key in ("slurm_error", "baseline_error"):
        if out.get(key):
            click.echo(f"slurmtools: warning: {out[key]}", err=True)
    out["events"] = len(out["events"])
    if as_json:
        emit_json(out)
        return
    click.echo(f"{out['gpus']} GPUs with probe results")
    for model, entry in sorted(out["models"].items()):
        click.echo(f"  {model}: n={entry['n']} " + " ".join(f"{k}={_f(entry.get(k))}" for k in
                                                            ("d2d_gbps", "h2d_gbps", "d2h_gbps", "fp32_tflops")))
    for flag in out["slow"]:
        click.echo(f"  slow: {flag['node']} {flag['cause']} ({flag['streak']} in a row)")
    for o in out["outcomes"]:
        click.echo(f"  {o['node']}: {o['action']} -> {o['outcome']}")


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:g}"
