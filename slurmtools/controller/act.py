"""Acting on a retry decision: requeuehold -> exclude the implicated nodes (+ the backoff as StartTime) ->
release -> verify, every step timestamped in the decision row, which is on record before anything is done.
A job already gone from slurmctld switches to resubmission."""

from __future__ import annotations

import math
import time
from typing import Any

from sqlalchemy.orm import Session

from slurmtools.controller import state
from slurmtools.controller.base import CD, COMPLETING_WAIT_S, Context, failed_try, is_held, run_of, summary, utcnow
from slurmtools.controller.resubmit import Resubmitter
from slurmtools.ledger import models
from slurmtools.slurm import SlurmError, expand
from slurmtools.slurm.types import JobInfo


class Actor:
    """Carries a retry decision out (inputs: the shared `Context`; the `Resubmitter` for a job slurmctld forgot)."""

    def __init__(self, ctx: Context, resubmitter: Resubmitter) -> None:
        self.ctx = ctx
        self.resubmitter = resubmitter

    def act(self, s: Session, d: CD) -> dict[str, Any]:
        """requeuehold -> exclude + StartTime -> release -> verify; every step timestamped."""
        details = state.of(d)
        if details.resubmit is not None:
            return self.resubmitter.act(s, d)
        ctx = self.ctx
        exclude = list(expand(d.excluded_nodes)) if d.excluded_nodes else []
        delay = details.delay_s
        tries = details.act_tries = details.act_tries + 1
        limit = int(ctx.cfg.controller.verify_attempts)
        alert = None
        try:
            job = run_of(ctx.job(d.job_id, fresh=True), (details.item or {}).get("sluid"), d.restart_count)
            if job is None and d.t_requeued is None and details.evacuate is None and not \
                    self.resubmitter.cannot_resubmit(s.get(models.RetryChain, d.chain_id) if d.chain_id else None):
                details.act_tries, details.resubmit = tries - 1, state.Resubmit()   # purged since the decision
                state.save(d, details)
                s.commit()
                return self.resubmitter.act(s, d)
            if job is None:
                raise SlurmError("the job left slurmctld's memory (MinJobAge) before it could be requeued")
            evacuating = details.evacuate is not None and job.state in ("RUNNING", "SUSPENDED")
            if job.restart_count == d.restart_count:
                if not evacuating and (job.state == "COMPLETING" or not job.finished):
                    # epilogs still running (COMPLETING), or a state between: not a failed try, wait for it
                    waited = (utcnow() - d.t_decided).total_seconds() if d.t_decided else 0.0
                    if waited < COMPLETING_WAIT_S:
                        details.act_tries = tries - 1
                        details.waiting = f"job in state {job.state}"
                        state.save(d, details)
                        s.commit()
                        return summary(d)
                    raise SlurmError(f"job still in state {job.state} for attempt {d.restart_count} after "
                                     f"{waited:.0f}s")
                ctx.slurm.requeue(d.job_id, hold=True)
                d.t_requeued = utcnow()
            elif d.t_requeued is None:
                details.requeued_by = "slurm"
            s.commit()   # the requeue is on record before anything else can fail
            if details.evacuate is not None:
                job = self._wait_requeued(d.job_id)
            # Slurm's credentials carry whole seconds: a retry launched on a node of the attempt within the second
            # its kill was recorded is refused there ("Job credential revoked", the job then FAILED); so never
            # sooner than controller.requeue_min_delay (found by the fault matrix: a transient retry, same node)
            delay = max(delay, float(ctx.cfg.controller.requeue_min_delay))
            start = "now" if delay <= 0 else f"now+{math.ceil(delay)}"
            ctx.slurm.update_job(d.job_id, excluded_nodes=exclude or None, start_time=start)
            job = ctx.job(d.job_id, fresh=True)
            if job is not None and is_held(job):
                ctx.slurm.release(d.job_id)
            d.t_released = utcnow()
            job = ctx.job(d.job_id, fresh=True)
            problems = verify(d, job, exclude)
            if problems:
                raise SlurmError("verify: " + "; ".join(problems))
            d.t_verified = utcnow()
            state.move(d, state.Status.DONE)
            details.last_error = None
        except SlurmError as exc:
            alert = failed_try(d, details, exc, tries, limit, "requeue", may_fail=True)
        state.save(d, details)
        s.commit()
        out = summary(d)
        if alert:
            out["alert"] = alert
        return out

    def _wait_requeued(self, job_id: int, timeout: float = 60.0) -> JobInfo | None:
        """A running job just requeued is COMPLETING until its steps are gone (KillWait): Slurm refuses an
        update of its excluded nodes until then. Bounded."""
        deadline = time.monotonic() + timeout
        job = self.ctx.job(job_id, fresh=True)
        while job is not None and job.state == "COMPLETING" and time.monotonic() < deadline:
            time.sleep(0.5)
            job = self.ctx.job(job_id, fresh=True)
        return job


def verify(d: CD, job: JobInfo | None, exclude: list[str]) -> list[str]:
    """What is wrong with JOB after decision D's requeue (none: it took)."""
    if job is None:
        return ["the job is gone"]
    problems = []
    if job.restart_count <= d.restart_count:
        problems.append(f"restart count still {job.restart_count}")
    if is_held(job):
        problems.append(f"still held ({job.state_reason})")
    missing = sorted(set(exclude) - set(job.excluded_nodes))
    if missing:
        problems.append("not excluded: " + ",".join(missing))
    return problems
