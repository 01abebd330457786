"""One ended attempt: wait for its epilogs' evidence, classify it (controller/policy.py), decide, and write the
decision row before anything is done; a decision found mid-flow (acting, evacuating) is finished instead."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from slurmtools.controller import exclusions, policy, safety
from slurmtools.controller.base import CD, EVACUATING, FINAL_STATUSES, utcnow
from slurmtools.controller.evacuate import Evacuating
from slurmtools.jobs import marker
from slurmtools.ledger import models
from slurmtools.ledger.chains import chain_key, decision_key, find_chain
from slurmtools.slurm import SlurmError, collect, expand
from slurmtools.slurm.types import ExitStatus, JobInfo

log = logging.getLogger(__name__)


@dataclass
class PassView:
    """One pass's reads for all its queue items (Deciding.prefetch)."""
    decided: set[str] = field(default_factory=set)                        # decision keys already in the ledger
    epilogs: dict[tuple[int, int], set[str]] = field(default_factory=dict)  # (job, restart) -> nodes reported
    soft: list[str] = field(default_factory=list)                         # nodes under a soft exclusion
    findings: dict[tuple[int, int], list[policy.Evidence]] = field(default_factory=dict)  # (job, restart) ->
    gates: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # job -> failed gates (node, checks)


def _evidence(f: models.Finding) -> policy.Evidence:
    return policy.Evidence(node=f.node, kind=f.kind, category=f.category, action=f.action, trust=f.trust,
                           message=f.message, superseded=bool((f.details or {}).get("superseded_by")),
                           do_not_requeue=bool((f.details or {}).get("do_not_requeue")), id=f.id)


def _chunks(values: list[Any], size: int = 1000) -> list[list[Any]]:
    return [values[i:i + size] for i in range(0, len(values), size)]


class Deciding(Evacuating):
    _view: PassView | None = None

    def process(self, item: dict[str, Any]) -> dict[str, Any]:
        job_id, restart = int(item["job_id"]), int(item.get("restart_count") or 0)
        key = decision_key(self.cluster, job_id, restart)
        with Session(self.engine, expire_on_commit=False) as s:
            view = self._view or self.prefetch([item])
            d = s.scalar(select(CD).where(CD.idempotency_key == key)) if key in view.decided else None
            if d is not None and d.status in FINAL_STATUSES:
                return self._summary(d)
            if d is not None and d.status == "acting":     # a restart mid-flow: finish, never requeue twice
                return self._act(s, d)
            if d is not None and d.status == EVACUATING:   # the evacuated attempt ended (or was ended by us)
                return self._evacuation_step(s, d)
            nodes = list(expand(item.get("nodes") or ""))
            waited = time.time() - float(item.get("enqueued") or 0)
            if set(nodes) - view.epilogs.get((job_id, restart), set()) and view is self._view:
                view = self.prefetch([item])     # asked again, with its findings: one may have arrived since
            missing = sorted(set(nodes) - view.epilogs.get((job_id, restart), set()))
            job = self._job(job_id)
            completing = job is not None and job.restart_count == restart and job.state == "COMPLETING"
            if (missing or completing) and waited < float(self.cfg.get("controller.evidence_wait")):
                return {"waiting": True, "job_id": job_id, "restart_count": restart, "missing_epilogs": missing,
                        "completing": completing}
            d = self._decide(s, item, job, nodes, missing, key, view)
            if d.status == "acting":
                return self._act(s, d)
            out = self._summary(d)
            if (d.details or {}).get("alert"):
                out["alert"] = d.details["alert"]
                log.error("controller: ALERT: %s", out["alert"])
            return out

    def prefetch(self, items: list[dict[str, Any]]) -> PassView:
        """What a pass over ITEMS reads for each of them, read for all at once (a few queries instead of a few per
        item: the difference on PostgreSQL, where each is a round trip). Only reads that nothing in the pass can
        change; an item with a missing epilog reads its own again (a one-item view), as does an item processed
        outside a pass."""
        keys = {decision_key(self.cluster, int(i["job_id"]), int(i.get("restart_count") or 0)) for i in items}
        job_ids = sorted({int(i["job_id"]) for i in items})
        view = PassView()
        A = models.JobAttempt
        with Session(self.engine) as s:
            for part in _chunks(sorted(keys)):
                view.decided.update(s.scalars(select(CD.idempotency_key).where(CD.idempotency_key.in_(part))))
            for part in _chunks(job_ids):
                for job_id, restart, details in s.execute(select(A.job_id, A.restart_count, A.details).where(
                        A.cluster == self.cluster, A.job_id.in_(part))):
                    view.epilogs.setdefault((job_id, restart), set()).update((details or {}).get("epilog") or {})
                F, G = models.Finding, models.GateRun
                for f in s.scalars(select(F).where(F.cluster == self.cluster, F.job_id.in_(part)).order_by(F.id)):
                    view.findings.setdefault((f.job_id or 0, f.restart_count or 0), []).append(_evidence(f))
                for g in s.scalars(select(G).where(G.cluster == self.cluster, G.job_id.in_(part),
                                                   G.verdict == "fail")):
                    view.gates.setdefault(g.job_id or 0, []).append((g.node, g.failed_checks))
            view.soft = exclusions.usable({x.node for x in exclusions.active(s, self.cluster) if x.scope == "soft"},
                                          exclusions.known_nodes(self.slurm))
        return view

    def _chain(self, s: Session, job_id: int, ask: marker.RetryAsk | None, user: str) -> models.RetryChain | None:
        C = models.RetryChain
        chain = find_chain(s, self.cluster, job_id)
        if chain is None and ask is not None and not ask.opted_out:
            chain = C(idempotency_key=chain_key(self.cluster, job_id), cluster=self.cluster, root_job_id=job_id,
                      user=user or None, created=utcnow(), max_retries=ask.max_retries, retry_on=ask.retry_on,
                      status="active", retries_used=0, details={"marker": ask.marker(), "source": "comment"})
            s.add(chain)          # flushed with its final counts, when the decision is written
        return chain

    def _accounted_state(self, job_id: int, restart: int, nodes: list[str], missing: list[str]) -> str:
        """The state sacct gives attempt RESTART of a job Slurm requeued itself (NODE_FAIL, REQUEUED, ...); without
        accounting, NODE_FAIL when a node of the attempt is down or never ran its epilog, else REQUEUED."""
        try:
            recs = [r for r in self.slurm.job_history(job_ids=[job_id], since=utcnow() - timedelta(days=7))
                    if r.job_id_raw == job_id and r.attempt == restart]
            if recs and recs[0].state:
                return str(recs[0].state)
        except (SlurmError, AttributeError, TypeError) as exc:
            log.info("controller: job %s: no accounting for attempt %s: %s", job_id, restart, exc)
        return "NODE_FAIL" if self._down(nodes) or missing else "REQUEUED"

    def _drained_for(self, job_id: int, missing: list[str]) -> list[tuple[str, str]]:
        """Nodes whose epilog never reported (its spool full, say) that our epilog drained naming this job: the
        drain is on record in Slurm even when its evidence is not in the ledger. Asked only when one is missing."""
        if not missing:
            return []
        prefix, tag = self.cfg.get("general.reason_prefix"), f"[job {job_id}]"
        return [(n.name, n.reason) for n in self.slurm.nodes(missing)
                if n.drain and safety.is_ours(n.reason, prefix) and n.reason.endswith(tag)]

    def _down(self, nodes: list[str]) -> list[str]:
        """The NODES Slurm has down or not responding."""
        return [n.name for n in self.slurm.nodes(nodes) if n.state == "down" or not n.responding]

    def _decide(self, s: Session, item: dict[str, Any], job: JobInfo | None, nodes: list[str], missing: list[str],
                key: str, view: PassView) -> Any:
        job_id, restart = int(item["job_id"]), int(item.get("restart_count") or 0)
        same = job is not None and job.restart_count == restart
        state = job.state if same and job is not None and job.finished else None
        exit_: ExitStatus | None = None
        if item.get("exit_raw") is not None:
            exit_ = ExitStatus.from_wait_status(int(item["exit_raw"]))
        elif same and job is not None:
            exit_ = job.exit
        findings = view.findings.get((job_id, restart), [])
        gates = view.gates.get(job_id, [])
        if state is None and job is not None and job.restart_count > restart:
            # Slurm requeued this attempt itself (a completed attempt never is): what ended it is in accounting
            state = self._accounted_state(job_id, restart, nodes, missing)
        down: list[str] = []
        if state in self.rules.node_fault_states:
            down = sorted(set(self._down(nodes)) | (set(missing) if state == "NODE_FAIL" else set()))  # no epilog: died
        attempt = policy.Attempt(job_id, restart, nodes, state, exit_, item.get("comment") or "")
        gates = [g for g in gates if not nodes or g[0] in nodes]
        cls = policy.classify(attempt, findings, self.rules, gate_failures=gates, down_nodes=down,
                              drained_for_job=self._drained_for(job_id, missing))
        comment = item.get("comment") or (job.comment if job else "")
        limit = int(self.cfg.get("controller.retry_limit"))
        ask = marker.parse_marker(comment, min(int(self.cfg.get("controller.max_retries")), limit),
                                  str(self.cfg.get("controller.retry_on")), limit=limit)
        chain = self._chain(s, job_id, ask, item.get("user") or (job.user if job else ""))
        if ask is None and chain is not None:           # recorded by `slurmtools sbatch`
            ask = marker.RetryAsk(min(chain.max_retries, limit), chain.retry_on)
        soft = view.soft
        dec = policy.decide(cls, ask, chain.retries_used if chain else 0,
                            already_excluded=list(job.excluded_nodes) if job else [], soft_excluded=soft,
                            base=float(self.cfg.get("controller.backoff")),
                            maximum=float(self.cfg.get("controller.backoff_max")),
                            jitter=float(self.cfg.get("controller.backoff_jitter")), rng=self.rng)
        acting = self.cfg.get("general.enabled") and not self.cfg.get("general.observe")
        alert = None
        if dec.action == "retry" and len(cls.implicated) > 1:
            limit = safety.breaker_limit(len(self.slurm.nodes()), self.cfg.get("safety.max_drain_fraction"),
                                         self.cfg.get("safety.min_drain_nodes"))
            if len(cls.implicated) > limit:   # a shared cause (fabric, filesystem, our config): a human decides
                alert = (f"job {job_id}: {len(cls.implicated)} nodes implicated at once (circuit breaker limit "
                         f"{limit}); not retried, nothing excluded")
                dec = policy.Decision("no_retry", "circuit breaker: " + alert, chain_status="failed")
        resubmit = False
        if dec.action == "retry" and job is None:
            refused = self._cannot_resubmit(chain)
            if refused:
                dec = policy.Decision("no_retry", "the job left slurmctld's memory (MinJobAge) before it could be "
                                                  f"requeued, and it cannot be resubmitted: {refused}",
                                      chain_status="failed")
            else:
                resubmit = True
        status = ("acting" if acting else "observed") if dec.action == "retry" else "done"
        now = utcnow()
        ended = job.end_time if same and job is not None and job.end_time else None
        detected = datetime.fromtimestamp(float(item.get("enqueued") or time.time()), tz=UTC)
        if chain is not None:
            if dec.action == "retry" and acting:
                chain.retries_used += 1
            chain.status = dec.chain_status
            if chain.id is None:
                s.flush()        # a new chain: one INSERT with its final counts, for its id
        d = CD(idempotency_key=key, cluster=self.cluster, job_id=job_id, restart_count=restart,
               chain_id=chain.id if chain else None, classification=cls.kind, decision=dec.action,
               reason=dec.reason[:2000], excluded_nodes=collect(dec.exclude) if dec.exclude else "",
               status=status, t_ended=ended or detected, t_detected=detected, t_decided=now,
               details={"classification": cls.to_dict(), "decision": dec.to_dict(),
                        "ask": ask.marker() if ask else None, "state": state, "exit": str(exit_) if exit_ else None,
                        "missing_epilogs": missing, "item": item, **({"alert": alert} if alert else {}),
                        **({"resubmit": {}} if resubmit else {})})
        s.add(d)
        if chain is not None:
            A = models.JobAttempt
            s.execute(update(A).where(A.cluster == self.cluster, A.job_id == job_id, A.restart_count == restart)
                      .values(chain_id=chain.id))
        s.commit()
        return d
