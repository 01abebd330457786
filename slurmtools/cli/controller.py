"""`slurmtools controller run|once|status`."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config

if TYPE_CHECKING:
    from slurmtools.controller.engine import Controller


def _controller(no_recovery: bool) -> Controller:
    from slurmtools.controller.engine import Controller
    from slurmtools.slurm import SlurmError

    cfg = get_config()
    try:
        return Controller(cfg, recovery=False if no_recovery else None)
    except SlurmError as exc:
        fail(str(exc))


@click.group("controller")
def controller_group() -> None:
    """The requeue controller: classify ended jobs, retry them away from faulty nodes, return nodes to service."""


@controller_group.command("once")
@click.option("--json", "as_json", is_flag=True, help="Print the pass's report as JSON.")
@click.option("--no-recovery", is_flag=True, help="Do not deep-check or resume excluded nodes in this pass.")
def controller_once(as_json: bool, no_recovery: bool) -> None:
    """One pass over the queue. Exit 0; 3 when the circuit breaker is open (drains are being refused);
    else 1 when an action failed or needs a human (alert) or an item errored."""
    report = _controller(no_recovery).once()
    if as_json:
        emit_json(report)
    else:
        for d in report["decisions"]:
            echo(f"job {d['job_id']}.{d['restart_count']}: {d['classification']} -> {d['decision']} "
                 f"[{d['status']}] {d['reason']}" + (f" exclude={d['excluded_nodes']}" if d["excluded_nodes"]
                                                    else ""))
        for w in report["waiting"]:
            echo(f"job {w['job_id']}.{w['restart_count']}: waiting for epilogs of "
                 + ",".join(w["missing_epilogs"]))
        for r in report["running"]:
            echo(f"job {r['job_id']}: attempt {r['restart_count']} running on {r['nodes']}")
        for row in report["lemons"] + report["recovery"] + report["failslow"]:
            echo("  ".join(f"{k}={v}" for k, v in row.items()))
        for e in report["errors"]:
            echo(f"error: {e}", err=True)
        for a in report["alerts"]:
            echo(f"ALERT: {a}", err=True)
        if report["breaker"]["open"]:
            echo(f"CIRCUIT BREAKER OPEN: {report['breaker']['detail']}", err=True)
    if report["breaker"]["open"]:
        sys.exit(3)
    if report["alerts"] or report["errors"]:
        sys.exit(1)


@controller_group.command("run")
@click.option("--interval", type=float, help="Seconds between passes (default controller.poll_interval).")
@click.option("--no-recovery", is_flag=True, help="Never deep-check or resume excluded nodes.")
def controller_run(interval: float | None, no_recovery: bool) -> None:
    """Run until SIGTERM/SIGINT (a systemd service on the slurmctld host)."""
    import logging

    if not logging.getLogger().handlers or logging.getLogger().level > logging.WARNING:
        logging.getLogger().setLevel(logging.WARNING)
    controller = _controller(no_recovery)
    stop = {"now": False}

    def _stop(signum: int, frame: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    cfg = controller.cfg
    echo(f"slurmtools controller: watching {cfg.controller.queue_dir}", err=True)
    leader = None
    if cfg.controller.leader_election:
        from slurmtools.controller.leader import Leader

        leader = Leader(controller.ctx.engine, controller.ctx.cluster)
    controller.run(interval or cfg.controller.poll_interval, lambda: stop["now"], leader)


@controller_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--limit", type=int, default=20, show_default=True, help="How many recent decisions.")
def controller_status(as_json: bool, limit: int) -> None:
    """The queue, the most recent decisions with their step timestamps, and the circuit breaker."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools import drain
    from slurmtools.controller import queue
    from slurmtools.ledger import api, models
    from slurmtools.slurm import SlurmError, get_client

    cfg = get_config()
    CD = models.ControllerDecision
    try:
        with Session(api.engine_for(cfg)) as s:
            rows = list(s.scalars(select(CD).where(CD.cluster == cfg.cluster).order_by(CD.id.desc()).limit(limit)))
    except Exception as exc:  # noqa: BLE001 - a database we cannot read, as a clear message
        fail(f"cannot read the ledger: {exc.__class__.__name__}: {str(exc).splitlines()[0]}", 1)
    try:
        breaker = drain.breaker_status(cfg, get_client(cfg))
    except SlurmError as exc:
        breaker = {"open": None, "detail": f"unknown: {exc}"}
    steps = ("t_ended", "t_detected", "t_decided", "t_requeued", "t_released", "t_verified", "t_running")
    decisions = [{"job_id": d.job_id, "restart_count": d.restart_count, "classification": d.classification,
                  "decision": d.decision, "status": d.status, "reason": d.reason, "excluded_nodes": d.excluded_nodes,
                  **{k: getattr(d, k).isoformat() if getattr(d, k) else None for k in steps}} for d in rows]
    try:
        queued = [item for _, item in queue.pending(cfg.controller.queue_dir,
                                                     queue.owners(cfg.controller.queue_user))]
    except (OSError, queue.QueueError) as exc:
        fail(f"controller queue: {exc}", 1)
    if as_json:
        emit_json({"queue": queued, "decisions": decisions, "breaker": breaker})
        return
    echo(f"queue: {len(queued)} attempt(s) waiting; circuit breaker: "
         f"{'OPEN' if breaker['open'] else 'closed'} ({breaker['detail']})")
    for d in decisions:
        latency = ""
        if d["t_running"] and d["t_ended"]:
            from datetime import datetime

            secs = (datetime.fromisoformat(str(d["t_running"])) -
                    datetime.fromisoformat(str(d["t_ended"]))).total_seconds()
            latency = f" running again after {secs:.0f}s"
        echo(f"job {d['job_id']}.{d['restart_count']}: {d['classification']} -> {d['decision']} "
             f"[{d['status']}] {d['reason']}{latency}")
