"""The requeue controller: for each ended attempt EpilogSlurmctld queued, gather the evidence, classify,
decide, act, verify, and audit every step in `controller_decisions`; then follow retried jobs until
they run, flag lemon nodes, and return excluded nodes to service after deep checks.

Idempotent by construction: the decision row (key: cluster, job, restart count) is written before
anything is done, and acting reads the job back first. A controller killed at any point and started
again finishes the flow without requeueing twice: a job whose restart count already moved on is not
requeued again. A queue file is removed only once its decision is final.

The parts, one concern a module, are objects the engine holds, each given its inputs explicitly: a `Context`
(base: configuration, Slurm, ledger, the pass's job table), an `Ingester` (submission records), a `Resubmitter`,
an `Actor` (requeue), an `Evacuator`, a `Decider` (one ended attempt), `Recovery` (lemons, failed node drains,
return to service) and `FailSlow` (the deep check of a node the fail-slow scan soft-excluded). Each stage of a
pass runs in its own `try`: a failure is reported with the stage's name and the other stages still run.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from slurmtools import drain
from slurmtools.controller import exclusions, queue, state
from slurmtools.controller.act import Actor
from slurmtools.controller.base import CD, STARTED, Context, utcnow
from slurmtools.controller.decide import Decider, PassView
from slurmtools.controller.evacuate import Evacuator
from slurmtools.controller.failslow import FailSlow
from slurmtools.controller.ingest import Ingester
from slurmtools.controller.recovery import Recovery
from slurmtools.controller.resubmit import Resubmitter
from slurmtools.plugins import PluginError
from slurmtools.slurm import collect

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from slurmtools.config import Config
    from slurmtools.controller.leader import Leader
    from slurmtools.slurm.base import Slurm

log = logging.getLogger(__name__)


class Controller:
    """The requeue controller: `once()` is one pass, `run()` repeats it."""

    def __init__(self, cfg: Config, *, slurm: Slurm | None = None, engine: Engine | None = None,
                 rng: random.Random | None = None,
                 recovery: bool | None = None,
                 deep_check: Callable[[str], tuple[str, dict[str, Any]]] | None = None) -> None:
        """RECOVERY: return nodes to service (default `controller.recovery`); DEEP_CHECK: the check a node must
        pass for it (default `controller.deep_check_command`)."""
        self.ctx = ctx = Context(cfg, slurm=slurm, engine=engine, rng=rng)
        self.cfg = cfg
        self.recovery_on = bool(cfg.controller.recovery) if recovery is None else recovery
        self.ingester = Ingester(ctx)
        self.resubmitter = Resubmitter(ctx)
        self.actor = Actor(ctx, self.resubmitter)
        self.evacuator = Evacuator(ctx, self.actor)
        self.decider = Decider(ctx, self.actor, self.evacuator, self.resubmitter)
        self.recovery = Recovery(ctx, deep_check)
        self.failslow = FailSlow(ctx, self.recovery.deep_check)
        self._last_publish = 0.0

    def once(self) -> dict[str, Any]:
        """One pass: the submissions, the queue, the follow-ups, evacuations, failed node drains, lemons, recovery,
        the fail-slow deep checks, the published exclusions, the breaker. Returns what happened; a stage that fails
        is in `errors`, named, and the others still run."""
        report: dict[str, Any] = {"decisions": [], "waiting": [], "errors": [], "alerts": [], "running": [],
                                  "evacuations": [], "redrains": [], "lemons": [], "recovery": [], "failslow": [],
                                  "submissions": [], "published": False,
                                  "breaker": {"open": None, "detail": "not read"}}
        self.ctx.new_pass()

        def stage(name: str, key: str | None, fn: Callable[[], Any]) -> None:
            try:
                value = fn()
            except Exception as exc:
                log.exception("controller: %s: %s", name, exc)
                report["errors"].append({"stage": name, "error": f"{name}: {type(exc).__name__}: {exc}"})
                return
            if key is not None:
                report[key] = value

        stage("submissions", "submissions", self.ingester.run)
        stage("decisions", None, lambda: self._decide_all(report))
        stage("follow-up", "running", self.follow_up)
        stage("evacuations", "evacuations", self.evacuator.run)
        stage("redrains", "redrains", self.recovery.redrain)
        stage("lemons", "lemons", lambda: self.recovery.lemons(
            [n for r in report["decisions"] for n in r.get("implicated", [])]))
        if self.recovery_on:
            stage("recovery", "recovery", self.recovery.recover)
        stage("fail-slow", "failslow", self.failslow.run)
        stage("publish", "published", self.publish)
        stage("breaker", "breaker", self.breaker)
        return report

    def recover(self, force: bool = False) -> list[dict[str, Any]]:
        """Deep checks and return to service, now (FORCE: whatever the interval)."""
        return self.recovery.recover(force=force)

    def _decide_all(self, report: dict[str, Any]) -> None:
        """The queue's ended attempts, each decided (an item that fails is reported, the others go on)."""
        try:
            items = queue.pending(self.ctx.queue_dir, queue.owners(str(self.cfg.controller.queue_user)))
        except (OSError, queue.QueueError) as exc:      # an untrusted queue: refused and reported, not read
            log.error("controller: queue: %s", exc)
            report["errors"].append({"stage": "queue", "error": f"queue: {exc}"})
            return
        if not items:
            return
        self.ctx.ship()
        view: PassView | None = None
        try:
            view = self.decider.prefetch([item for _, item in items])
        except (SQLAlchemyError, ValueError, TypeError, KeyError) as exc:    # each item then reads for itself
            log.warning("controller: prefetch: %s: %s", type(exc).__name__, exc)
        for path, item in items:
            try:
                result = self.decider.process(item, view)
            except Exception as exc:
                log.exception("controller: job %s: %s", item.get("job_id"), exc)
                report["errors"].append({"stage": "decisions", "job_id": item.get("job_id"),
                                         "error": f"{type(exc).__name__}: {exc}"})
                continue
            if result.get("waiting"):
                report["waiting"].append(result)
                continue
            report["decisions"].append(result)
            if result.get("alert"):
                report["alerts"].append(result["alert"])
            if state.Status(result["status"]).final:
                queue.done(path)

    def publish(self) -> bool:
        """Keep the published exclusions current (epilog drains reach the ledger through the spool)."""
        now_m = time.monotonic()
        if now_m - self._last_publish < 5.0:
            return False
        self._last_publish = now_m
        try:
            with Session(self.ctx.engine) as s:
                return exclusions.publish(self.cfg, s, known=exclusions.known_nodes(self.ctx.slurm))
        except (OSError, PluginError) as exc:
            log.warning("controller: cannot publish the exclusions: %s", exc)
            return False
    def run(self, interval: float, should_stop: Callable[[], bool], leader: Leader | None = None) -> None:
        """Passes every INTERVAL until SHOULD_STOP, each logged; with LEADER (controller.leader.Leader), only while
        it holds the lock: a second controller (the backup slurmctld host's) waits and takes over when the first
        dies. A pass that fails is logged and the next one comes."""
        try:
            while not should_stop():
                started = time.monotonic()
                if leader is None or leader.hold():         # not the leader: skip this pass, ask again next time
                    try:
                        log_pass(self.once())
                    except Exception as exc:
                        log.exception("controller: pass failed: %s", exc)
                left = interval - (time.monotonic() - started)
                while left > 0 and not should_stop():
                    time.sleep(min(left, 0.2))
                    left -= 0.2
        finally:
            if leader is not None:
                leader.release()

    def follow_up(self) -> list[dict[str, Any]]:
        """Stamp t_running on retries whose next attempt has started (the recovery latency's end)."""
        since = utcnow() - timedelta(days=1)
        out: list[dict[str, Any]] = []
        with Session(self.ctx.engine, expire_on_commit=False) as s:
            rows = list(s.scalars(select(CD).where(CD.cluster == self.ctx.cluster, CD.decision == "retry",
                                                   CD.status == state.Status.DONE.value, CD.t_running.is_(None),
                                                   CD.t_decided >= since).limit(500)))
            if not rows:
                return out
            for d in rows:
                new_id = state.of(d).resubmitted_as      # resubmitted: the new job
                job = self.ctx.job(d.job_id if new_id is None else new_id)
                moved_on = job is not None and (new_id is not None or job.restart_count > d.restart_count)
                if job is None or not moved_on or job.state not in STARTED or job.start_time is None:
                    continue
                d.t_running = job.start_time
                out.append({"job_id": job.job_id, "restart_count": job.restart_count, "nodes": collect(job.nodes),
                            "t_running": d.t_running.isoformat(),
                            **({"resubmitted_from": d.job_id} if new_id is not None else {})})
            s.commit()
        return out

    def breaker(self) -> dict[str, Any]:
        return drain.breaker_status(self.cfg, self.ctx.slurm)


def log_pass(report: dict[str, Any]) -> None:
    """A pass's decisions, alerts and an open breaker, logged."""
    for d in report["decisions"]:
        log.warning("controller: job %s.%s: %s %s (%s)", d["job_id"], d["restart_count"],
                    d["classification"], d["decision"], d["reason"])
    for a in report["alerts"]:
        log.error("controller: ALERT: %s", a)
    if report["breaker"]["open"]:
        log.error("controller: circuit breaker open: %s", report["breaker"]["detail"])
