"""The requeue controller: for each ended attempt EpilogSlurmctld queued, gather the evidence, classify,
decide, act, verify, and audit every step in `controller_decisions`; then follow retried jobs until
they run, flag lemon nodes, and return excluded nodes to service after deep checks.

Idempotent by construction: the decision row (key: cluster, job, restart count) is written before
anything is done, and acting reads the job back first. A controller killed at any point and started
again finishes the flow without requeueing twice: a job whose restart count already moved on is not
requeued again. A queue file is removed only once its decision is final.

The parts, one concern a module, are mixins joined here: `ingest` (submission records), `decide` (one ended
attempt), `act` (requeue), `resubmit`, `evacuate`, `recovery` (lemons, return to service), over `base`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from slurmtools.controller import exclusions, queue, safety
from slurmtools.controller.base import CD, FINAL_STATUSES, STARTED, utcnow
from slurmtools.controller.decide import Deciding
from slurmtools.controller.ingest import Ingesting
from slurmtools.controller.recovery import Recovering
from slurmtools.plugins import PluginError
from slurmtools.slurm import collect

log = logging.getLogger(__name__)


class Controller(Deciding, Ingesting, Recovering):
    """The requeue controller: `once()` is one pass, `run()` repeats it."""

    def once(self) -> dict[str, Any]:
        """One pass: the queue, the follow-ups, lemons, recovery. Returns what happened."""
        report: dict[str, Any] = {"decisions": [], "waiting": [], "errors": [], "alerts": [], "running": [],
                                  "evacuations": [], "redrains": [], "lemons": [], "recovery": []}
        self._jobs = None
        try:
            report["submissions"] = self.ingest_submissions()
        except Exception as exc:
            log.exception("controller: submissions: %s", exc)
            report["errors"].append({"error": f"submissions: {type(exc).__name__}: {exc}"})
        try:
            items = queue.pending(self.queue_dir, queue.owners(str(self.cfg.get("controller.queue_user"))))
        except (OSError, queue.QueueError) as exc:      # an untrusted queue: refused and reported, not read
            log.error("controller: queue: %s", exc)
            report["errors"].append({"error": f"queue: {exc}"})
            items = []
        if items:
            self._ship()
            try:
                self._view = self.prefetch([item for _, item in items])
            except (SQLAlchemyError, ValueError, TypeError, KeyError) as exc:    # each item then reads for itself
                log.warning("controller: prefetch: %s: %s", type(exc).__name__, exc)
        try:
            self._decide_all(items, report)
        finally:
            self._view = None
        try:
            report["running"] = self.follow_up()
            report["evacuations"] = self.evacuate()
            report["redrains"] = self.redrain()
            report["lemons"] = self.lemons([n for r in report["decisions"] for n in r.get("implicated", [])])
            if self.recovery:
                report["recovery"] = self.recover()
        except Exception as exc:
            log.exception("controller: %s", exc)
            report["errors"].append({"error": f"{type(exc).__name__}: {exc}"})
        report["published"] = self.publish()
        report["breaker"] = self.breaker()
        return report

    def _decide_all(self, items: list[tuple[Any, dict[str, Any]]], report: dict[str, Any]) -> None:
        for path, item in items:
            try:
                result = self.process(item)
            except Exception as exc:
                log.exception("controller: job %s: %s", item.get("job_id"), exc)
                report["errors"].append({"job_id": item.get("job_id"), "error": f"{type(exc).__name__}: {exc}"})
                continue
            if result.get("waiting"):
                report["waiting"].append(result)
                continue
            report["decisions"].append(result)
            if result.get("alert"):
                report["alerts"].append(result["alert"])
            if result.get("status") in FINAL_STATUSES:
                queue.done(path)

    def publish(self) -> bool:
        """Keep the published exclusions current (epilog drains reach the ledger through the spool)."""
        now_m = time.monotonic()
        if now_m - self._last_publish < 5.0:
            return False
        self._last_publish = now_m
        try:
            with Session(self.engine) as s:
                return exclusions.publish(self.cfg, s, known=exclusions.known_nodes(self.slurm))
        except (OSError, PluginError) as exc:
            log.warning("controller: cannot publish the exclusions: %s", exc)
            return False

    def run(self, interval: float, should_stop: Callable[[], bool], leader: Any = None) -> None:
        """Passes every INTERVAL until SHOULD_STOP; with LEADER (controller.leader.Leader), only while it holds
        the lock: a second controller (the backup slurmctld host's) waits and takes over when the first dies."""
        try:
            self._run(interval, should_stop, leader)
        finally:
            if leader is not None:
                leader.release()

    def _run(self, interval: float, should_stop: Callable[[], bool], leader: Any) -> None:
        while not should_stop():
            started = time.monotonic()
            if leader is None or leader.hold():             # not the leader: skip this pass, ask again next time
                try:
                    self._pass()
                except Exception as exc:
                    log.exception("controller: pass failed: %s", exc)
            left = interval - (time.monotonic() - started)
            while left > 0 and not should_stop():
                time.sleep(min(left, 0.2))
                left -= 0.2

    def _pass(self) -> None:
        """One pass, its decisions, alerts and an open breaker logged."""
        report = self.once()
        for d in report["decisions"]:
            log.warning("controller: job %s.%s: %s %s (%s)", d["job_id"], d["restart_count"],
                        d["classification"], d["decision"], d["reason"])
        for a in report["alerts"]:
            log.error("controller: ALERT: %s", a)
        if report["breaker"]["open"]:
            log.error("controller: circuit breaker open: %s", report["breaker"]["detail"])

    def follow_up(self) -> list[dict[str, Any]]:
        """Stamp t_running on retries whose next attempt has started (the recovery latency's end)."""
        since = utcnow() - timedelta(days=1)
        out: list[dict[str, Any]] = []
        with Session(self.engine, expire_on_commit=False) as s:
            rows = list(s.scalars(select(CD).where(CD.cluster == self.cluster, CD.decision == "retry",
                                                   CD.status == "done", CD.t_running.is_(None),
                                                   CD.t_decided >= since).limit(500)))
            if not rows:
                return out
            for d in rows:
                new_id = ((d.details or {}).get("resubmit") or {}).get("job_id")   # resubmitted: the new job
                job = self._job(d.job_id if new_id is None else int(new_id))
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
        return safety.breaker_status(self.cfg, self.slurm)
