"""`slurmtools ledger ...`: create, fill, read, export and prune the failure ledger."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmtools.cli.common import (
    echo,
    emit_json,
    fail,
    get_config,
    ledger_engine,
    ledger_session,
    since_option,
    spool_and_flush,
)
from slurmtools.textsafe import clean

if TYPE_CHECKING:
    from slurmtools.ledger.models import Finding


@click.group("ledger")
def ledger_group() -> None:
    """The failure ledger: findings, attempts, verdicts, drains, exclusions, decisions."""


@ledger_group.command("init")
def ledger_init() -> None:
    """Create or migrate the ledger schema (Alembic)."""
    from slurmtools.ledger import schema

    engine = ledger_engine()
    try:
        schema.upgrade(engine)
    except Exception as exc:  # noqa: BLE001
        fail(f"cannot initialise the ledger: {str(exc).splitlines()[0]}", 1)
    echo(f"ledger ready: {engine.url.render_as_string(hide_password=True)}")


@ledger_group.command("flush")
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", is_flag=True, help="No output (for hooks and cron).")
def ledger_flush(as_json: bool, quiet: bool) -> None:
    """Ship spooled events to the database. Exit 1 if the database is unreachable (events kept)."""
    from slurmtools.ledger import api
    from slurmtools.ledger.db import LedgerError
    from slurmtools.ledger.spool import SpoolError

    try:
        result = api.flush(get_config(), wait_lock=not quiet)
    except (LedgerError, SpoolError, OSError) as exc:
        if quiet:
            sys.exit(1)
        fail(str(exc) if not isinstance(exc, OSError) or not exc.strerror
             else f"spool: {exc.filename or ''}: {exc.strerror}")
    if as_json:
        emit_json(result.to_dict())
    elif not quiet:
        msg = f"shipped {result.shipped}, quarantined {result.quarantined}, pending {result.left}"
        echo(msg + (f" ({result.error})" if result.error else ""))
    sys.exit(1 if result.error else 0)


@ledger_group.command("record")
@click.option("--node", required=True, help="The node the observation is about.")
@click.option("--job", type=int, help="A job id, if any.")
@click.option("--kind", required=True, help="What it is: gpu_replaced, cable_reseat, note, ...")
@click.option("--message", "-m", required=True)
@click.option("--category", default="unknown",
              type=click.Choice(["hardware", "driver", "network", "filesystem", "application", "unknown"]))
@click.option("--severity", default="info", type=click.Choice(["info", "warning", "error", "critical"]))
@click.option("--json", "as_json", is_flag=True)
def ledger_record(node: str, job: int | None, kind: str, message: str, category: str, severity: str,
                  as_json: bool) -> None:
    """Record a manual observation (a replaced GPU, a reseated cable) through the spool."""
    import getpass

    from slurmtools.ledger.spool import Event

    cfg = get_config()
    data = {"node": node, "job_id": job, "source": "admin", "kind": kind, "category": category,
            "severity": severity, "action": "none", "trust": "admin", "message": message,
            "details": {"by": getpass.getuser()}}
    event = Event("finding", data, cluster=cfg.cluster)
    result = spool_and_flush([event])
    if as_json:
        emit_json({"key": event.key, **result})
    else:
        echo(f"recorded {kind} on {node} (key {event.key[:12]})")


def _finding_dict(f: Finding) -> dict[str, Any]:
    return {"id": f.id, "time": f.time.isoformat(), "cluster": f.cluster, "node": f.node, "job_id": f.job_id,
            "restart_count": f.restart_count, "source": f.source, "kind": f.kind, "xid": f.xid, "pci": f.pci,
            "gpu": f.gpu, "category": f.category, "severity": f.severity, "action": f.action, "trust": f.trust,
            "message": f.message, "details": f.details}


@ledger_group.command("events")
@click.option("--node")
@click.option("--since", help="e.g. 7d, 12h, 2026-11-01")
@click.option("--kind")
@click.option("--job", type=int)
@click.option("--limit", type=int, default=200, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def ledger_events(node: str | None, since: str | None, kind: str | None, job: int | None, limit: int,
                  as_json: bool) -> None:
    """Findings, newest first."""
    from sqlalchemy import select

    from slurmtools.ledger.models import Finding

    when = since_option(since)
    stmt = select(Finding).order_by(Finding.time.desc(), Finding.id.desc()).limit(limit)
    if node:
        stmt = stmt.where(Finding.node == node)
    if when:
        stmt = stmt.where(Finding.time >= when)
    if kind:
        stmt = stmt.where(Finding.kind == kind)
    if job is not None:
        stmt = stmt.where(Finding.job_id == job)
    with ledger_session() as session:
        rows = [_finding_dict(f) for f in session.scalars(stmt)]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        job_text = f" job {r['job_id']}" if r["job_id"] is not None else ""
        echo(f"{r['id']:>6} {r['time'][:19]} {clean(r['node'] or '-'):<10} {r['severity']:<8} {r['category']:<11} "
             f"{clean(r['kind'])}{job_text}: {clean(r['message'][:100])}")


@ledger_group.command("show")
@click.argument("finding_id", type=int)
@click.option("--json", "as_json", is_flag=True)
def ledger_show(finding_id: int, as_json: bool) -> None:
    """One finding with all its details."""
    from slurmtools.ledger.models import Finding

    with ledger_session() as session:
        finding = session.get(Finding, finding_id)
        if finding is None:
            fail(f"no finding with id {finding_id}", 1)
        row = _finding_dict(finding)
    if as_json:
        emit_json(row)
    else:
        for key, value in row.items():
            echo(f"{key:>14}: {clean(value)}")


@ledger_group.command("nodes")
@click.option("--since", help="Count findings since (e.g. 30d).")
@click.option("--json", "as_json", is_flag=True)
def ledger_nodes(since: str | None, as_json: bool) -> None:
    """Per node: findings by severity, last finding, node events."""
    from sqlalchemy import func, select

    from slurmtools.ledger.models import Finding, Node, NodeEvent

    when = since_option(since)
    with ledger_session() as session:
        fstmt = select(Finding.cluster, Finding.node, Finding.severity, func.count(), func.max(Finding.time)) \
            .group_by(Finding.cluster, Finding.node, Finding.severity)
        if when:
            fstmt = fstmt.where(Finding.time >= when)
        estmt = select(NodeEvent.cluster, NodeEvent.node, func.count()).group_by(NodeEvent.cluster, NodeEvent.node)
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for n in session.scalars(select(Node)):
            out[(n.cluster, n.name)] = {"cluster": n.cluster, "node": n.name, "first_seen": n.first_seen.isoformat(),
                                        "last_seen": n.last_seen.isoformat(), "findings": {}, "last_finding": None,
                                        "node_events": 0}
        for cluster, node, severity, count, last in session.execute(fstmt):
            entry = out.get((cluster, node))
            if entry is None:
                continue
            entry["findings"][severity] = count
            last_text = last.isoformat() if last else None
            if last_text and (entry["last_finding"] is None or last_text > entry["last_finding"]):
                entry["last_finding"] = last_text
        for cluster, node, count in session.execute(estmt):
            if (cluster, node) in out:
                out[(cluster, node)]["node_events"] = count
    rows = sorted(out.values(), key=lambda r: (r["cluster"], r["node"]))
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(r["findings"].items())) or "no findings"
        echo(f"{clean(r['node']):<12} {counts}; {r['node_events']} node events; last finding {r['last_finding']}")


def _import(events: list[Any], as_json: bool, what: str) -> None:
    result = spool_and_flush(events)
    if as_json:
        emit_json({"imported": len(events), **result})
    else:
        echo(f"{what}: {len(events)} record(s) spooled, {result.get('shipped', 0)} shipped"
             + (f", {result['left']} left in the spool" if result.get("left") else ""))
    sys.exit(1 if result.get("error") else 0)


@ledger_group.command("import-sacct")
@click.option("--since", help="Start of the window (default: the last import, else 30d).")
@click.option("--json", "as_json", is_flag=True)
def ledger_import_sacct(since: str | None, as_json: bool) -> None:
    """Import job attempts from Slurm accounting (sacct). Incremental and idempotent."""
    from datetime import timedelta

    from slurmtools.ledger import imports
    from slurmtools.ledger.models import Meta
    from slurmtools.slurm import SlurmError, get_client

    cfg = get_config()
    mark_key = f"sacct_watermark:{cfg.cluster}"
    started = datetime.now(UTC)
    with ledger_session() as session:
        mark = session.get(Meta, mark_key)
        when = since_option(since) or (datetime.fromisoformat(mark.value) if mark else started - timedelta(days=30))
    try:
        events = imports.sacct_events(get_client(cfg), cfg.cluster, when)
    except SlurmError as exc:
        fail(str(exc), 1)
    result = spool_and_flush(events)
    if not result.get("error"):
        with ledger_session() as session, session.begin():
            session.merge(Meta(key=mark_key, value=started.isoformat()))
    if as_json:
        emit_json({"imported": len(events), "since": when.isoformat(), **result})
    else:
        echo(f"sacct since {when.isoformat(timespec='seconds')}: {len(events)} attempt(s), "
             f"{result.get('shipped', 0)} shipped")
    sys.exit(1 if result.get("error") else 0)


@ledger_group.command("import-node-events")
@click.option("--since", default="365d", show_default=True)
@click.option("--json", "as_json", is_flag=True)
def ledger_import_node_events(since: str, as_json: bool) -> None:
    """Import node DOWN/DRAIN periods from `sacctmgr show event`."""
    from slurmtools.ledger import imports
    from slurmtools.slurm import SlurmError, get_client

    cfg = get_config()
    try:
        raw = get_client(cfg).node_events(since=since_option(since))
    except SlurmError as exc:
        fail(str(exc), 1)
    _import(imports.node_event_events(raw, cfg.cluster), as_json, "sacctmgr events")


@ledger_group.command("import-events")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--cluster", help="Cluster name for these events (default: the configured one).")
@click.option("--trace-start", help="For start/end-pair traces with day offsets: the trace's first day "
                                    "(default 2024-03-30, the InfiniteHBD trace's).")
@click.option("--json", "as_json", is_flag=True)
def ledger_import_events(path: Path, cluster: str | None, trace_start: str | None, as_json: bool) -> None:
    """Import a node-fault trace (JSON, JSONL or CSV: node, start, end, category, description)."""
    from slurmtools.ledger import imports

    base = None
    if trace_start:
        base = since_option(trace_start)
    try:
        events = imports.trace_events(path, cluster or get_config().cluster, base=base,
                                      progress=lambda n: echo(f"  read {n} fault periods", err=True))
    except (imports.TraceError, OSError) as exc:
        fail(str(exc), 1)
    if not as_json:
        echo(f"{path}: {len(events)} fault period(s); shipping", err=True)
    _import(events, as_json, str(path))


@ledger_group.command("export")
@click.option("--table", "tables", multiple=True, help="Only these tables (default: all).")
def ledger_export(tables: tuple[str, ...]) -> None:
    """Every row as JSON Lines on stdout: {"table": ..., "row": {...}}."""
    from sqlalchemy import select

    from slurmtools.ledger.models import Base
    from slurmtools.textsafe import dumps

    known = Base.metadata.tables
    unknown = [t for t in tables if t not in known]
    if unknown:
        fail(f"unknown table(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    with ledger_session() as session:
        for name in tables or sorted(known):
            for row in session.execute(select(known[name])).mappings():
                echo(dumps({"table": name, "row": dict(row)}))


@ledger_group.command("prune")
@click.option("--before", required=True, help="Delete gate-run history older than this (e.g. 180d).")
@click.option("--json", "as_json", is_flag=True)
def ledger_prune(before: str, as_json: bool) -> None:
    """Delete old gate-run history and info-level findings. Attempts, exclusions and decisions stay."""
    from sqlalchemy import delete

    from slurmtools.ledger.models import Finding, GatePassCount, GateRun, ShippedKey

    cutoff = since_option(before)
    assert cutoff is not None
    counts: dict[str, int] = {}
    with ledger_session() as session, session.begin():
        counts["gate_runs"] = session.execute(delete(GateRun).where(GateRun.time < cutoff)).rowcount
        counts["gate_pass_counts"] = session.execute(
            delete(GatePassCount).where(GatePassCount.day < cutoff.strftime("%Y-%m-%d"))).rowcount
        counts["shipped_keys"] = session.execute(delete(ShippedKey).where(ShippedKey.time < cutoff)).rowcount
        counts["findings"] = session.execute(
            delete(Finding).where(Finding.time < cutoff, Finding.severity == "info")).rowcount
    if as_json:
        emit_json(counts)
    else:
        echo(", ".join(f"{k}: {v} deleted" for k, v in counts.items()))
