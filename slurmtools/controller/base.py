"""What every part of the controller shares, passed to each part explicitly: `Context` (configuration, Slurm
client, ledger engine, the pass's job table, recording events) and the small steps several parts use (a failed
try, joining a job to a chain, a decision's summary). `engine.Controller` builds one and hands it to its parts."""

from __future__ import annotations

import logging
import random
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.controller import policy, state
from slurmtools.ledger import api, models
from slurmtools.ledger.spool import Event
from slurmtools.slurm import SlurmError
from slurmtools.slurm.base import Slurm
from slurmtools.slurm.types import JobInfo

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from slurmtools.config import Config

log = logging.getLogger(__name__)

CD = models.ControllerDecision
#: How long acting waits for a job to leave COMPLETING (its epilogs) before it counts as a failure.
COMPLETING_WAIT_S = 600.0
#: States of an attempt that got as far as running (a retry cancelled while pending never ran).
STARTED = frozenset({"RUNNING", "COMPLETING", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"})
AUTO_SOURCES = frozenset({"prolog", "epilog", "controller", "sync"})


def utcnow() -> datetime:
    return datetime.now(UTC)


def is_held(job: JobInfo) -> bool:
    return job.state == "PENDING" and "held" in job.state_reason.lower()


def run_of(job: JobInfo | None, sluid: object, restart: int) -> JobInfo | None:
    """JOB if it may be the job whose run RESTART (with SLUID, from EpilogSlurmctld) ended, else None.

    Where Slurm gives both SLUIDs (25.11+: the queue item's SLURM_JOB_SLUID, squeue's `step_id.sluid`), a job that
    is not past that run (restart count not above it) yet carries another SLUID is another job under a reused job
    id: never requeued, updated or released for this decision; the decision reads it as gone. Without either
    SLUID (older releases; the pyslurm backend, whose Job exposes none) the job id and restart count decide, as
    they always did."""
    if job is None or not isinstance(sluid, str) or not sluid or job.sluid is None:
        return job
    if job.restart_count <= restart and job.sluid != sluid:
        log.warning("controller: job %s in slurmctld is run %s, not the run %s that ended (a reused job id): "
                    "left alone", job.job_id, job.sluid, sluid)
        return None
    return job


class Context:
    """The controller's shared inputs: CFG, the Slurm client, the ledger engine, the rules, the random source
    (backoff jitter), and slurmctld's job table, read once per pass."""

    def __init__(self, cfg: Config, *, slurm: Slurm | None = None, engine: Engine | None = None,
                 rng: random.Random | None = None) -> None:
        from slurmtools.slurm import get_client

        self.cfg = cfg
        self.cluster: str = cfg.cluster
        self.slurm: Slurm = slurm or get_client(cfg)
        self.engine = engine or api.engine_for(cfg)
        self.rules = policy.Rules.from_config(cfg)
        self.rng = rng or random.Random()
        self.queue_dir = str(cfg.controller.queue_dir)
        self._jobs: dict[int, JobInfo] | None = None

    def new_pass(self) -> None:
        """Forget the job table: the next read asks slurmctld again."""
        self._jobs = None

    def all_jobs(self, fresh: bool = False) -> dict[int, JobInfo]:
        """slurmctld's jobs, read once per pass (FRESH: read again)."""
        if self._jobs is None or fresh:
            self._jobs = {j.job_id: j for j in self.slurm.jobs()}
        return self._jobs

    def job(self, job_id: int, fresh: bool = False) -> JobInfo | None:
        return self.all_jobs(fresh).get(int(job_id))

    def ship(self) -> None:
        """Ship what this host spooled (the node epilogs on a one-host lab; our own events)."""
        try:
            api.flush(self.cfg)
        except Exception as exc:  # noqa: BLE001 - the evidence wait covers a slow ledger
            log.warning("controller: ledger flush failed: %s", exc)

    def record(self, events: list[Event]) -> None:
        if not events:
            return
        api.record(events, self.cfg)
        self.ship()

    def join_chain(self, s: Session, chain: models.RetryChain, d: CD, job_id: int) -> None:
        """JOB_ID (a resubmission of decision D's job) joins CHAIN."""
        J = models.ChainJob
        row = s.scalar(select(J).where(J.cluster == self.cluster, J.job_id == job_id))
        if row is None:                    # (an old row: Slurm reused the job id)
            row = J(cluster=self.cluster, job_id=job_id, chain_id=chain.id, created=utcnow())
            s.add(row)
        row.chain_id, row.created = chain.id, utcnow()
        row.details = {"replaces": {"job_id": d.job_id, "restart_count": d.restart_count}}


def failed_try(d: CD, details: state.Details, exc: SlurmError, tries: int, limit: int, what: str,
               may_fail: bool) -> str | None:
    """Record a failed try of acting on D; past LIMIT tries (and when MAY_FAIL) the decision fails with an alert,
    which is returned."""
    details.last_error = str(exc)
    details.errors = [*(details.errors or []), {"time": utcnow().isoformat(), "error": str(exc)[:500]}]
    if tries >= limit and may_fail:
        state.move(d, state.Status.FAILED)
        alert = f"job {d.job_id}: {what} did not take after {tries} tries: {exc}"
        log.error("controller: ALERT: %s", alert)
        return alert
    log.warning("controller: job %s: %s: %s (try %d of %d)", d.job_id, what, exc, tries, limit)
    return None


def summary(d: CD) -> dict[str, Any]:
    """Decision D as a pass reports it."""
    details = state.of(d)
    cls = details.classification or {}
    new_id = details.resubmitted_as
    return {"job_id": d.job_id, "restart_count": d.restart_count, "classification": d.classification,
            "decision": d.decision, "reason": d.reason, "excluded_nodes": d.excluded_nodes, "status": d.status,
            "implicated": cls.get("implicated", []), "error": details.last_error,
            **({"resubmitted_as": new_id} if new_id is not None else {})}
