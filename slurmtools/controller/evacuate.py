"""Evacuation: a job that asked for an emergency checkpoint (`slurmtools sbatch --checkpoint-signal`) and runs
on a node we are draining, or on a node `slurmtools detect` flagged (a soft exclusion of source `detect`, with
`detect.evacuate` on), gets its signal, its grace, then the usual requeue away from the node. Recorded before
the signal; does not spend the retry budget."""

from __future__ import annotations

import logging
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.controller import exclusions, safety
from slurmtools.controller.act import Acting
from slurmtools.controller.base import CD, EVACUATING, utcnow
from slurmtools.ledger import models
from slurmtools.ledger.chains import decision_key, find_chain
from slurmtools.slurm import SlurmError, collect
from slurmtools.slurm.types import JobInfo

log = logging.getLogger(__name__)


class Evacuating(Acting):
    def evacuate(self) -> list[dict[str, Any]]:
        """Take jobs off nodes we are draining while they run (an admin `exclude add` on a busy node, a drain
        by a non-fatal finding): a job submitted with `slurmtools sbatch --checkpoint-signal SIG` gets SIG
        (batch shell), its grace to save, then the usual requeue away from those nodes. Other jobs finish
        where they are; the node drains after them. An evacuation does not spend the retry budget."""
        if not self.cfg.get("controller.evacuate") or not self.cfg.get("general.enabled") \
                or self.cfg.get("general.observe"):
            return []
        out: list[dict[str, Any]] = []
        with Session(self.engine, expire_on_commit=False) as s:
            for d in list(s.scalars(select(CD).where(CD.cluster == self.cluster, CD.status == EVACUATING))):
                out.append(self._evacuation_step(s, d))
            prefix = str(self.cfg.get("general.reason_prefix"))
            draining = {n.name: n.reason for n in safety.drained_by_us(self.slurm.nodes(), prefix) if n.draining}
            if self.cfg.get("detect.evacuate"):      # a metrics flag: checkpoint before the failure, not after
                for x in exclusions.active(s, self.cluster):
                    if x.scope == "soft" and "detect" in str(x.source).split("+"):
                        draining.setdefault(x.node, f"flagged by detect: {x.reason}")
            if not draining:
                return out
            for job in list(self._all_jobs(fresh=True).values()):
                busy = sorted(set(job.nodes) & set(draining))
                if job.state != "RUNNING" or not busy:
                    continue
                key = decision_key(self.cluster, job.job_id, job.restart_count)
                if s.scalar(select(CD.id).where(CD.idempotency_key == key)) is not None:
                    continue
                chain = find_chain(s, self.cluster, job.job_id)
                ckpt = (chain.details or {}).get("checkpoint") if chain is not None else None
                if not ckpt or chain is None or chain.status != "active":
                    continue
                out.append(self._start_evacuation(s, job, chain, busy, draining, ckpt))
        return out

    def _start_evacuation(self, s: Session, job: JobInfo, chain: models.RetryChain, busy: list[str],
                          draining: dict[str, str], ckpt: dict[str, Any]) -> dict[str, Any]:
        sig, grace = str(ckpt.get("signal") or "USR1"), float(ckpt.get("grace") or 0)
        soft = set(exclusions.usable({x.node for x in exclusions.active(s, self.cluster) if x.scope == "soft"},
                                     exclusions.known_nodes(self.slurm)))
        exclude = sorted(set(busy) | set(job.excluded_nodes) | soft)
        why = "; ".join(f"{n}: {draining[n]}" for n in busy)
        now = utcnow()
        d = CD(idempotency_key=decision_key(self.cluster, job.job_id, job.restart_count), cluster=self.cluster,
               job_id=job.job_id, restart_count=job.restart_count, chain_id=chain.id, classification="evacuation",
               decision="retry", reason=(f"{collect(busy)} taken out of service while the job ran ({why}); "
                                         f"checkpoint signal {sig}, {grace:.0f}s grace, then requeued")[:2000],
               excluded_nodes=collect(exclude), status=EVACUATING, t_ended=None, t_detected=now, t_decided=now,
               details={"evacuate": {"signal": sig, "grace": grace, "nodes": busy}, "decision": {"delay_s": 0},
                        "state": job.state})
        s.add(d)
        s.commit()     # on record before the signal: a restarted controller continues, never signals twice
        evac = dict(d.details["evacuate"])
        try:
            self.slurm.signal(job.job_id, sig, batch_only=True)
            evac["signalled"] = time.time()
        except SlurmError as exc:      # no signal, no grace: requeue at once (the job asked to be moved)
            evac["signal_error"] = str(exc)[:500]
            evac["signalled"] = time.time() - grace
        d.details = {**d.details, "evacuate": evac}
        s.commit()
        log.warning("controller: job %s: evacuating from %s: %s sent, requeue in %.0fs", job.job_id,
                    collect(busy), sig, grace)
        return self._summary(d)

    def _evacuation_step(self, s: Session, d: Any) -> dict[str, Any]:
        """Past the grace, or once the attempt ended by itself (a trap that saves and exits): requeue."""
        evac = (d.details or {}).get("evacuate") or {}
        job = self._job(d.job_id)
        running = job is not None and job.restart_count == d.restart_count and job.state == "RUNNING"
        if running and time.time() - float(evac.get("signalled") or 0) < float(evac.get("grace") or 0):
            return {**self._summary(d), "waiting": "grace"}
        d.status = "acting"
        s.commit()
        return self._act(s, d)
