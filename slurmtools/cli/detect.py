"""`slurmtools detect`: multi-signal failure detection over Prometheus (docs/detection.md)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config, since_option
from slurmtools.textsafe import clean

if TYPE_CHECKING:
    from slurmtools.config import Config
    from slurmtools.detect import prom, scan


@click.group("detect")
def detect_group() -> None:
    """Flag GPUs, NICs and nodes drifting toward failure, from DCGM and node_exporter metrics in Prometheus."""


def _setup(prometheus: str | None) -> tuple[Any, Any, Any]:
    from slurmtools.detect import prom, scan
    from slurmtools.timeutil import parse_duration

    cfg = get_config()
    try:
        setup = scan.setup_from(cfg)
        chunk = parse_duration(cfg.detect.chunk).total_seconds()
    except ValueError as exc:
        fail(f"[detect]: {exc}")
    return cfg, setup, prom.Client(prometheus or cfg.detect.prometheus, chunk_s=chunk,
                                   max_bytes=cfg.detect.max_answer_bytes,
                                   max_series=cfg.detect.max_series)


def _time(value: str) -> float:
    t = since_option(value)
    assert t is not None      # click always gives a value (required, or a default)
    return t.timestamp()


def _scan(client: prom.Client, setup: scan.Setup, start: float, end: float) -> scan.Result:
    from slurmtools.detect import prom, scan

    try:
        return scan.run_scan(client, setup, start, end)
    except prom.PromError as exc:
        fail(str(exc), 1)


def _record(cfg: Config, res: scan.Result, flags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from slurmtools.cli.common import ledger_session, spool_and_flush
    from slurmtools.controller import exclusions
    from slurmtools.detect import act
    from slurmtools.slurm import get_client

    with ledger_session() as s:
        current = exclusions.active(s, cfg.cluster)
    excluded = {x.node for x in current}
    try:
        slurm = get_client(cfg)
        known: set[str] | None = {n.name for n in slurm.nodes()}
    except Exception as exc:  # noqa: BLE001 - no answer from Slurm: every flag recorded, nothing acted on
        why = str(exc).splitlines()[0] if str(exc) else repr(exc)
        echo(f"slurmtools: warning: cannot ask Slurm which nodes exist ({why}); flags are recorded, nothing is "
             "excluded or drained", err=True)
        slurm, known = None, None
    events, outcomes = act.events_for(cfg, flags, known=known, excluded=excluded, slurm=slurm,
                                      active_detect=sum(1 for x in current if "detect" in str(x.source).split("+")))
    if events:
        spool_and_flush(events, quiet=True)
        with ledger_session() as s:
            try:
                exclusions.publish(cfg, s, known=known)
            except OSError as exc:
                echo(f"slurmtools: warning: exclusions not published: {exc}", err=True)
    return outcomes


@detect_group.command("scan")
@click.option("--prometheus", metavar="URL", help="Prometheus server (default: detect.prometheus).")
@click.option("--start", required=True, help="Start of the window (2026-11-01T00:00, 7d for 7 days ago, ...).")
@click.option("--end", default="now", show_default=True, help="End of the window.")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of flags (the contract: docs/detection.md).")
@click.option("--record", is_flag=True, help="Record each flag in the ledger and act on it (soft exclusion, "
                                               "or a drain for a hard signal) through the safety rails.")
def detect_scan(prometheus: str | None, start: str, end: str, as_json: bool, record: bool) -> None:
    """Score every device over [START, END] and print the flags raised in it."""
    from slurmtools.detect import scan

    cfg, setup, client = _setup(prometheus)
    t0, t1 = _time(start), _time(end)
    if t1 <= t0:
        fail(f"--start ({start}) is not before --end ({end})")
    res = _scan(client, setup, t0, t1)
    flags = [scan.flag_dict(f, res.grid) for f in res.flags]
    outcomes = _record(cfg, res, flags) if record else []
    fleet = [scan.fleet_dict(e, res.grid) for e in res.fleet]
    if as_json:
        emit_json(flags if not record else [{**f, "acted": o} for f, o in zip(flags, outcomes, strict=True)])
        if fleet:
            echo(f"slurmtools: {len(fleet)} fleet event(s) (not flagged): "
                 + "; ".join(_fleet_line(e) for e in fleet), err=True)
        return
    echo(f"{len(flags)} flag(s); {res.series} series, {res.queries} queries, {res.seconds:.1f}s"
         + (f"; no data for {', '.join(res.missing)}" if res.missing else ""))
    for e in fleet:
        echo(f"fleet event (not flagged): {_fleet_line(e)}")
    for i, f in enumerate(flags):
        sigs = ", ".join(s["signal"] for s in f["signals"][:4])
        act = f"  -> {outcomes[i]['outcome']}" if record else ""
        echo(f"{clean(f['node']):<12} {clean(f['device'] or '-'):<10} {f['start']} .. {f['end']}  {f['kind']:<12} "
             f"score {f['score']:<6} {'HARD ' if f['hard'] else ''}{sigs}{act}")


@detect_group.command("explain")
@click.argument("node")
@click.option("--at", "at", default="now", show_default=True, help="The moment to explain.")
@click.option("--prometheus", metavar="URL", help="Prometheus server (default: detect.prometheus).")
@click.option("--json", "as_json", is_flag=True)
def detect_explain(node: str, at: str, prometheus: str | None, as_json: bool) -> None:
    """Every signal of NODE at one moment: value, peers' median, own baseline, z-scores and evidence."""
    from slurmtools.detect import scan

    _, setup, client = _setup(prometheus)
    t = _time(at)
    res = _scan(client, setup, t - 3600.0, t)
    rows = scan.explain(res, node, t)
    if not rows:
        fail(f"no series for node {node!r} around {scan.iso(t)}", 1)
    flags = [scan.flag_dict(f, res.grid) for f in res.flags if f.node == node]
    if as_json:
        emit_json({"node": node, "at": scan.iso(t), "signals": rows, "flags": flags})
        return
    echo(f"{node} at {scan.iso(t)}: {len(flags)} flag(s) in the hour before")
    echo(f"{'signal':<22} {'device':<10} {'value':>12} {'peers':>12} {'own':>12} {'z_peer':>7} {'z_self':>7} "
         f"{'evid':>6}")
    for r in rows:
        echo(f"{r['signal']:<22} {clean(r['device'] or '-'):<10} {_f(r['value']):>12} {_f(r['peer_median']):>12} "
             f"{_f(r['own_baseline']):>12} {_f(r['z_peer']):>7} {_f(r['z_self']):>7} {_f(r['evidence']):>6}")


def _fleet_line(e: dict[str, Any]) -> str:
    return f"{e['kind']} on {len(e['nodes'])} nodes ({clean(', '.join(e['nodes'][:8]))}) {e['start']} .. {e['end']}"


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


@detect_group.command("run")
@click.option("--prometheus", metavar="URL", help="Prometheus server (default: detect.prometheus).")
@click.option("--interval", default="5m", show_default=True, help="Evaluate the newest window this often.")
@click.option("--once", is_flag=True, help="One evaluation, then exit (for cron and tests).")
def detect_run(prometheus: str | None, interval: str, once: bool) -> None:
    """A service: every INTERVAL, score the newest window and record and act on new flags (`scan --record`)."""
    from slurmtools.detect import scan
    from slurmtools.timeutil import parse_duration

    cfg, setup, client = _setup(prometheus)
    try:
        every = parse_duration(interval).total_seconds()
    except ValueError as exc:
        fail(str(exc))
    together = setup.params.together_s
    while True:
        t1 = time.time()
        # A flag is acted on once `together` has passed since it began (so it is known whether it is part of a
        # node-level or fleet event), a hard one at once; the ledger's keys make a flag seen twice one finding.
        res = _scan(client, setup, t1 - every - together, t1)
        ready = [f for f in res.flags if f.hard or res.grid.times[f.start_i] <= t1 - together]
        flags = [scan.flag_dict(f, res.grid) for f in ready]
        outcomes = _record(cfg, res, flags) if flags else []
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        echo(f"{stamp} {len(flags)} flag(s) in {res.seconds:.1f}s"
             + "".join(f"; {o['node']} {o['outcome']}" for o in outcomes), err=True)
        if once:
            return
        time.sleep(max(1.0, every - (time.time() - t1)))
