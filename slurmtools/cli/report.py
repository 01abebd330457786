"""`slurmtools report`: the study's figures from the ledger, as text, JSON, CSV or one HTML file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config, since_option

if TYPE_CHECKING:
    from slurmtools.config import Config

FORMATS = ("text", "json", "csv", "html")


@click.command("report")
@click.option("--since", default="30d", show_default=True, help="Start of the window (7d, 2026-11-01, ...).")
@click.option("--until", default="now", show_default=True, help="End of the window.")
@click.option("--cluster", help="Cluster name in the ledger (default: the configured one).")
@click.option("--partition", help="Only jobs of this partition (sections built from jobs).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE, not stdout.")
@click.option("--section", "sections", multiple=True, metavar="S",
              help="Only these sections (repeatable): failures, mttf, mttr, goodput, concentration, retries, "
                   "detection, checkpoints, gpu_perf, whatif, unrecognised, stalls.")
@click.option("--nodes", type=click.IntRange(min=1), help="Nodes in the fleet (default: reports.nodes, else the "
                                                          "nodes the ledger knows).")
@click.option("--gpus-per-node", type=click.IntRange(min=1), help="GPUs per node (default: reports.gpus_per_node).")
@click.option("--connections", type=click.IntRange(1, 4),
              help="PostgreSQL: connections the sections run on at once, on one snapshot (default: "
                   "reports.connections; 1: one after the other).")
def report_cmd(since: str, until: str, cluster: str | None, partition: str | None, fmt: str, as_json: bool,
               output: Path | None, sections: tuple[str, ...], nodes: int | None, gpus_per_node: int | None,
               connections: int | None) -> None:
    """Failures and MTBF, projected MTTF by job size, MTTR, goodput per retry chain, exclusion concentration,
    automatic vs manual retries and detection quality, from the ledger (docs/reports.md)."""
    from slurmtools.ledger import api
    from slurmtools.ledger.db import LedgerError, make_engine
    from slurmtools.reports.build import SECTIONS, ReportError, build_report
    from slurmtools.reports.scope import Scope

    cfg = get_config()
    fmt = "json" if as_json else fmt
    if fmt == "html" and output is None:
        fail("--format html writes a file: give -o FILE")
    bad = [s for s in sections if s not in SECTIONS]
    if bad:
        fail(f"unknown section(s) {', '.join(bad)}; known: {', '.join(SECTIONS)}")
    t0, t1 = since_option(since), since_option(until)
    assert t0 is not None and t1 is not None
    scope = Scope(cluster=cluster or cfg.cluster, since=t0, until=t1, partition=partition,
                  nodes=nodes or cfg.reports.nodes,
                  gpus_per_node=gpus_per_node or cfg.reports.gpus_per_node,
                  merge_gap_s=cfg.reports.merge_gap, lookback_s=cfg.reports.lookback,
                  manual_window_s=cfg.reports.manual_retry_window,
                  multi_node_min=cfg.reports.multi_node_min)
    from slurmtools.ledger import schema

    try:
        schema.ensure(api.engine_for(cfg))    # brings a writable ledger up to date; a clear error otherwise
    except LedgerError as exc:
        fail(str(exc), 1)
    except Exception as exc:  # noqa: BLE001 - a clear message, not a traceback
        fail(f"ledger database unavailable: {str(exc).strip().splitlines()[0]}", 1)
    scope.extra["recovery_target_s"] = cfg.reports.recovery_target
    if gpus_per_node:
        scope.extra["gpus_per_node_from"] = "option --gpus-per-node"
    else:
        scope.gpus_per_node, scope.extra["gpus_per_node_from"] = _gpus_per_node(cfg, scope.cluster)
    try:
        engine = make_engine(cfg.ledger.url, readonly=True)   # a long read never holds SQLite's write lock
        data = build_report(engine, scope, prefix=cfg.reason_prefix,
                            sections=tuple(sections) or SECTIONS, charts=fmt == "html",
                            connections=connections or cfg.reports.connections)
    except (LedgerError, ReportError) as exc:
        fail(str(exc), 1)
    finally:
        api.forget_engines()
        if "engine" in locals():
            engine.dispose()
    if fmt == "json":
        if output:
            from slurmtools.textsafe import dumps

            output.write_text(dumps(data, indent=2) + "\n", encoding="utf-8")
        else:
            emit_json(data)
        return
    if fmt == "html":
        from slurmtools.reports.html import render_html

        text = render_html(data)
    elif fmt == "csv":
        from slurmtools.reports.render import csv_text

        text = csv_text(data)
    else:
        from slurmtools.reports.render import text as render_text
        from slurmtools.textsafe import clean

        text = clean(render_text(data), lines=True)   # a reason or a node name cannot drive a terminal
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror}", 1)
    echo(f"wrote {output}", err=True)


def _gpus_per_node(cfg: Config, cluster: str) -> tuple[float, str]:
    """Slurm's GRES of each node (this cluster's Slurm only), else the ledger's last reading, else the config."""
    from slurmtools.ledger import api
    from slurmtools.reports.gpus import gpus_per_node

    nodes = None
    if cluster == cfg.cluster:
        try:
            from slurmtools.slurm import get_client

            nodes = get_client(cfg).nodes()
        except Exception:  # noqa: BLE001 - Slurm not reachable from here: the ledger's copy, or the configuration
            nodes = None
    return gpus_per_node(api.engine_for(cfg), cluster, nodes, cfg.reports.gpus_per_node)
