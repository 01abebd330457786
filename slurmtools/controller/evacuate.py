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

from slurmtools import drain
from slurmtools.controller import exclusions, state
from slurmtools.controller.act import Actor
from slurmtools.controller.base import CD, Context, summary, utcnow
from slurmtools.ledger import models
from slurmtools.ledger.chains import decision_key, find_chain
from slurmtools.slurm import SlurmError, collect
from slurmtools.slurm.base import Slurm
from slurmtools.slurm.types import JobInfo

log = logging.getLogger(__name__)


class Evacuator:
    """Moves checkpointing jobs off nodes taken out from under them (inputs: the shared `Context`; the `Actor`,
    which requeues them once their grace is over)."""

    def __init__(self, ctx: Context, actor: Actor) -> None:
        self.ctx = ctx
        self.actor = actor

    def run(self) -> list[dict[str, Any]]:
        """Take jobs off nodes we are draining while they run (an admin `exclude add` on a busy node, a drain
        by a non-fatal finding): a job submitted with `slurmtools sbatch --checkpoint-signal SIG` gets SIG
        (batch shell), its grace to save, then the usual requeue away from those nodes. Other jobs finish
        where they are; the node drains after them. An evacuation does not spend the retry budget."""
        ctx = self.ctx
        if not ctx.cfg.controller.evacuate or not ctx.cfg.general.enabled \
                or ctx.cfg.general.observe:
            return []
        out: list[dict[str, Any]] = []
        with Session(ctx.engine, expire_on_commit=False) as s:
            for d in list(s.scalars(select(CD).where(CD.cluster == ctx.cluster,
                                                     CD.status == state.Status.EVACUATING.value))):
                out.append(self.step(s, d))
            prefix = str(ctx.cfg.reason_prefix)
            draining = {n.name: n.reason for n in drain.drained_by_us(ctx.slurm.nodes(), prefix) if n.draining}
            if ctx.cfg.detect.evacuate:      # a metrics flag: checkpoint before the failure, not after
                for x in exclusions.active(s, ctx.cluster):
                    if x.scope == "soft" and "detect" in str(x.source).split("+"):
                        draining.setdefault(x.node, f"flagged by detect: {x.reason}")
            if not draining:
                return out
            for job in list(ctx.all_jobs(fresh=True).values()):
                busy = sorted(set(job.nodes) & set(draining))
                if job.state != "RUNNING" or not busy:
                    continue
                key = decision_key(ctx.cluster, job.job_id, job.restart_count)
                if s.scalar(select(CD.id).where(CD.idempotency_key == key)) is not None:
                    continue
                chain = find_chain(s, ctx.cluster, job.job_id)
                ckpt = (chain.details or {}).get("checkpoint") if chain is not None else None
                if not ckpt or chain is None or chain.status != "active":
                    continue
                out.append(self._start(s, job, chain, busy, draining, ckpt))
        return out

    def _start(self, s: Session, job: JobInfo, chain: models.RetryChain, busy: list[str],
               draining: dict[str, str], ckpt: dict[str, Any]) -> dict[str, Any]:
        ctx = self.ctx
        sig, grace = str(ckpt.get("signal") or "USR1"), float(ckpt.get("grace") or 0)
        soft = set(exclusions.usable({x.node for x in exclusions.active(s, ctx.cluster) if x.scope == "soft"},
                                     exclusions.known_nodes(ctx.slurm)))
        exclude = sorted(set(busy) | set(job.excluded_nodes) | soft)
        why = "; ".join(f"{n}: {draining[n]}" for n in busy)
        now = utcnow()
        d = CD(idempotency_key=decision_key(ctx.cluster, job.job_id, job.restart_count), cluster=ctx.cluster,
               job_id=job.job_id, restart_count=job.restart_count, chain_id=chain.id, classification="evacuation",
               decision="retry", reason=(f"{collect(busy)} taken out of service while the job ran ({why}); "
                                         f"checkpoint signal {sig}, {grace:.0f}s grace, then requeued")[:2000],
               excluded_nodes=collect(exclude), status=state.Status.EVACUATING.value, t_ended=None, t_detected=now,
               t_decided=now)
        evac = state.Evacuate(signal=sig, grace=grace, nodes=busy)
        details = state.Details(evacuate=evac, decision={"delay_s": 0}, state=job.state)
        state.save(d, details)
        s.add(d)
        s.commit()     # on record before the signal: a restarted controller continues, never signals twice
        signal(ctx.slurm, job.job_id, evac)
        state.save(d, details)
        s.commit()
        log.warning("controller: job %s: evacuating from %s: %s sent, requeue in %.0fs", job.job_id,
                    collect(busy), sig, grace)
        return summary(d)

    def step(self, s: Session, d: CD) -> dict[str, Any]:
        """Past the grace, or once the attempt ended by itself (a trap that saves and exits): requeue."""
        evac = state.of(d).evacuate or state.Evacuate()
        job = self.ctx.job(d.job_id)
        running = job is not None and job.restart_count == d.restart_count and job.state == "RUNNING"
        if running and time.time() - float(evac.signalled or 0) < float(evac.grace or 0):
            return {**summary(d), "waiting": "grace"}
        state.move(d, state.Status.ACTING)
        s.commit()
        return self.actor.act(s, d)


def signal(slurm: Slurm, job_id: int, evac: state.Evacuate) -> None:
    """Send the job's checkpoint signal to its batch shell and note when (no signal to send, or Slurm refusing it:
    the grace is over at once, as the job asked to be moved)."""
    if not evac.signal:
        evac.signalled = time.time()
        return
    try:
        slurm.signal(job_id, evac.signal, batch_only=True)
        evac.signalled = time.time()
    except SlurmError as exc:
        evac.signal_error = str(exc)[:500]
        evac.signalled = time.time() - evac.grace
