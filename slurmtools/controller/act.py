"""Acting on a retry decision: requeuehold -> exclude the implicated nodes (+ the backoff as StartTime) ->
release -> verify, every step timestamped in the decision row, which is on record before anything is done.
A job already gone from slurmctld switches to resubmission."""

from __future__ import annotations

import math
import time
from typing import Any

from sqlalchemy.orm import Session

from slurmtools.controller.base import COMPLETING_WAIT_S, is_held, utcnow
from slurmtools.controller.resubmit import Resubmitting
from slurmtools.ledger import models
from slurmtools.slurm import SlurmError, expand
from slurmtools.slurm.types import JobInfo


class Acting(Resubmitting):
    def _act(self, s: Session, d: Any) -> dict[str, Any]:
        """requeuehold -> exclude + StartTime -> release -> verify; every step timestamped."""
        if (d.details or {}).get("resubmit") is not None:
            return self._act_resubmit(s, d)
        exclude = list(expand(d.excluded_nodes)) if d.excluded_nodes else []
        delay = float((d.details or {}).get("decision", {}).get("delay_s") or 0)
        tries = int((d.details or {}).get("act_tries", 0)) + 1
        details = dict(d.details or {})
        details["act_tries"] = tries
        limit = int(self.cfg.get("controller.verify_attempts"))
        alert = None
        try:
            job = self._job(d.job_id, fresh=True)
            if job is None and d.t_requeued is None and not details.get("evacuate") \
                    and not self._cannot_resubmit(s.get(models.RetryChain, d.chain_id) if d.chain_id else None):
                d.details = {**details, "act_tries": tries - 1, "resubmit": {}}   # purged since the decision
                s.commit()
                return self._act_resubmit(s, d)
            if job is None:
                raise SlurmError("the job left slurmctld's memory (MinJobAge) before it could be requeued")
            evacuating = bool(details.get("evacuate")) and job.state in ("RUNNING", "SUSPENDED")
            if job.restart_count == d.restart_count:
                if not evacuating and (job.state == "COMPLETING" or not job.finished):
                    # epilogs still running (COMPLETING), or a state between: not a failed try, wait for it
                    waited = (utcnow() - d.t_decided).total_seconds() if d.t_decided else 0.0
                    if waited < COMPLETING_WAIT_S:
                        details["act_tries"] = tries - 1
                        details["waiting"] = f"job in state {job.state}"
                        d.details = details
                        s.commit()
                        return self._summary(d)
                    raise SlurmError(f"job still in state {job.state} for attempt {d.restart_count} after "
                                     f"{waited:.0f}s")
                self.slurm.requeue(d.job_id, hold=True)
                d.t_requeued = utcnow()
            elif d.t_requeued is None:
                details["requeued_by"] = "slurm"
            s.commit()   # the requeue is on record before anything else can fail
            if details.get("evacuate"):
                job = self._wait_requeued(d.job_id)
            # Slurm's credentials carry whole seconds: a retry launched on a node of the attempt within the second
            # its kill was recorded is refused there ("Job credential revoked", the job then FAILED); so never
            # sooner than controller.requeue_min_delay (found by the fault matrix: a transient retry, same node)
            delay = max(delay, float(self.cfg.get("controller.requeue_min_delay")))
            start = "now" if delay <= 0 else f"now+{math.ceil(delay)}"
            self.slurm.update_job(d.job_id, excluded_nodes=exclude or None, start_time=start)
            job = self._job(d.job_id, fresh=True)
            if job is not None and is_held(job):
                self.slurm.release(d.job_id)
            d.t_released = utcnow()
            job = self._job(d.job_id, fresh=True)
            problems = self._verify(d, job, exclude)
            if problems:
                raise SlurmError("verify: " + "; ".join(problems))
            d.t_verified = utcnow()
            d.status = "done"
            details.pop("last_error", None)
        except SlurmError as exc:
            alert = self._failed_try(d, details, exc, tries, limit, "requeue", may_fail=True)
        d.details = details
        s.commit()
        out = self._summary(d)
        if alert:
            out["alert"] = alert
        return out

    @staticmethod
    def _verify(d: Any, job: JobInfo | None, exclude: list[str]) -> list[str]:
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

    def _wait_requeued(self, job_id: int, timeout: float = 60.0) -> JobInfo | None:
        """A running job just requeued is COMPLETING until its steps are gone (KillWait): Slurm refuses an
        update of its excluded nodes until then. Bounded."""
        deadline = time.monotonic() + timeout
        job = self._job(job_id, fresh=True)
        while job is not None and job.state == "COMPLETING" and time.monotonic() < deadline:
            time.sleep(0.5)
            job = self._job(job_id, fresh=True)
        return job
