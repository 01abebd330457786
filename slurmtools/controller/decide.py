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

from slurmtools import drain
from slurmtools.controller import exclusions, policy, state
from slurmtools.controller.act import Actor
from slurmtools.controller.base import CD, Context, run_of, summary, utcnow
from slurmtools.controller.evacuate import Evacuator
from slurmtools.controller.resubmit import Resubmitter
from slurmtools.diagnosis.faults import superseded
from slurmtools.jobs import marker
from slurmtools.ledger import models
from slurmtools.ledger.chains import chain_key, decision_key, find_chain
from slurmtools.slurm import SlurmError, collect, expand
from slurmtools.slurm.types import ExitStatus, JobInfo

log = logging.getLogger(__name__)


@dataclass
class PassView:
    """One pass's reads for all its queue items (Decider.prefetch)."""
    decided: set[str] = field(default_factory=set)                        # decision keys already in the ledger
    epilogs: dict[tuple[int, int], set[str]] = field(default_factory=dict)  # (job, restart) -> nodes reported
    soft: list[str] = field(default_factory=list)                         # nodes under a soft exclusion
    findings: dict[tuple[int, int], list[policy.Evidence]] = field(default_factory=dict)  # (job, restart) ->
    gates: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # job -> failed gates (node, checks)


def _evidence(f: models.Finding) -> policy.Evidence:
    return policy.Evidence(node=f.node, kind=f.kind, category=f.category, action=f.action, trust=f.trust,
                           message=f.message, superseded=superseded(f),
                           do_not_requeue=bool((f.details or {}).get("do_not_requeue")), id=f.id)


def _chunks(values: list[Any], size: int = 1000) -> list[list[Any]]:
    return [values[i:i + size] for i in range(0, len(values), size)]


@dataclass
class Gathered:
    """What is known of one ended attempt when it is decided (Decider.gather)."""
    job_id: int
    restart: int
    item: dict[str, Any]
    job: JobInfo | None                   # slurmctld's job now (None: it left slurmctld's memory)
    nodes: list[str]
    missing: list[str]                    # nodes whose epilog never reported
    state: str | None = None              # Slurm's state of the attempt, when known
    exit: ExitStatus | None = None
    findings: list[policy.Evidence] = field(default_factory=list)
    gates: list[tuple[str, str]] = field(default_factory=list)

    @property
    def same(self) -> bool:
        """slurmctld's job is still in this attempt."""
        return self.job is not None and self.job.restart_count == self.restart


class Decider:
    """Decides each ended attempt and writes its decision row before anything is done; a decision found mid-flow
    is handed on (inputs: the shared `Context`; the `Actor`, `Evacuator` and `Resubmitter` that carry it out)."""

    def __init__(self, ctx: Context, actor: Actor, evacuator: Evacuator, resubmitter: Resubmitter) -> None:
        self.ctx = ctx
        self.cfg = ctx.cfg
        self.actor = actor
        self.evacuator = evacuator
        self.resubmitter = resubmitter

    def process(self, item: dict[str, Any], view: PassView | None = None) -> dict[str, Any]:
        """ITEM (a queue item): its decision, or that it waits for evidence. VIEW: the pass's reads (prefetch);
        without one, the item reads for itself."""
        ctx = self.ctx
        job_id, restart = int(item["job_id"]), int(item.get("restart_count") or 0)
        key = decision_key(ctx.cluster, job_id, restart)
        with Session(ctx.engine, expire_on_commit=False) as s:
            shared = view
            view = view or self.prefetch([item])
            d = s.scalar(select(CD).where(CD.idempotency_key == key)) if key in view.decided else None
            if d is not None:
                status = state.Status(d.status)
                if status.final:
                    return summary(d)
                if status == state.Status.ACTING:         # a restart mid-flow: finish, never requeue twice
                    return self.actor.act(s, d)
                if status == state.Status.EVACUATING:     # the evacuated attempt ended (or was ended by us)
                    return self.evacuator.step(s, d)
            nodes = list(expand(item.get("nodes") or ""))
            waited = time.time() - float(item.get("enqueued") or 0)
            if set(nodes) - view.epilogs.get((job_id, restart), set()) and view is shared:
                view = self.prefetch([item])     # asked again, with its findings: one may have arrived since
            missing = sorted(set(nodes) - view.epilogs.get((job_id, restart), set()))
            job = run_of(ctx.job(job_id), item.get("sluid"), restart)
            completing = job is not None and job.restart_count == restart and job.state == "COMPLETING"
            if (missing or completing) and waited < float(self.cfg.controller.evidence_wait):
                return {"waiting": True, "job_id": job_id, "restart_count": restart, "missing_epilogs": missing,
                        "completing": completing}
            d = self._decide(s, self.gather(item, job, nodes, missing, view), key, view)
            if d.status == state.Status.ACTING:
                return self.actor.act(s, d)
            out = summary(d)
            alert = state.of(d).alert
            if alert:
                out["alert"] = alert
                log.error("controller: ALERT: %s", alert)
            return out

    def prefetch(self, items: list[dict[str, Any]]) -> PassView:
        """What a pass over ITEMS reads for each of them, read for all at once (a few queries instead of a few per
        item: the difference on PostgreSQL, where each is a round trip). Only reads that nothing in the pass can
        change; an item with a missing epilog reads its own again (a one-item view), as does an item processed
        outside a pass."""
        cluster = self.ctx.cluster
        keys = {decision_key(cluster, int(i["job_id"]), int(i.get("restart_count") or 0)) for i in items}
        job_ids = sorted({int(i["job_id"]) for i in items})
        view = PassView()
        A = models.JobAttempt
        with Session(self.ctx.engine) as s:
            for part in _chunks(sorted(keys)):
                view.decided.update(s.scalars(select(CD.idempotency_key).where(CD.idempotency_key.in_(part))))
            for part in _chunks(job_ids):
                for job_id, restart, details in s.execute(select(A.job_id, A.restart_count, A.details).where(
                        A.cluster == cluster, A.job_id.in_(part))):
                    view.epilogs.setdefault((job_id, restart), set()).update((details or {}).get("epilog") or {})
                F, G = models.Finding, models.GateRun
                for f in s.scalars(select(F).where(F.cluster == cluster, F.job_id.in_(part)).order_by(F.id)):
                    view.findings.setdefault((f.job_id or 0, f.restart_count or 0), []).append(_evidence(f))
                for g in s.scalars(select(G).where(G.cluster == cluster, G.job_id.in_(part),
                                                   G.verdict == "fail")):
                    view.gates.setdefault(g.job_id or 0, []).append((g.node, g.failed_checks))
            view.soft = exclusions.usable({x.node for x in exclusions.active(s, cluster) if x.scope == "soft"},
                                          exclusions.known_nodes(self.ctx.slurm))
        return view

    def _chain(self, s: Session, job_id: int, ask: marker.RetryAsk | None, user: str) -> models.RetryChain | None:
        C = models.RetryChain
        cluster = self.ctx.cluster
        chain = find_chain(s, cluster, job_id)
        if chain is None and ask is not None and not ask.opted_out:
            chain = C(idempotency_key=chain_key(cluster, job_id), cluster=cluster, root_job_id=job_id,
                      user=user or None, created=utcnow(), max_retries=ask.max_retries, retry_on=ask.retry_on,
                      status="active", retries_used=0, details={"marker": ask.marker(), "source": "comment"})
            s.add(chain)          # flushed with its final counts, when the decision is written
        return chain

    def _accounted_state(self, job_id: int, restart: int, nodes: list[str], missing: list[str]) -> str:
        """The state sacct gives attempt RESTART of a job Slurm requeued itself (NODE_FAIL, REQUEUED, ...); without
        accounting, NODE_FAIL when a node of the attempt is down or never ran its epilog, else REQUEUED."""
        try:
            recs = [r for r in self.ctx.slurm.job_history(job_ids=[job_id], since=utcnow() - timedelta(days=7))
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
        prefix, tag = self.cfg.reason_prefix, f"[job {job_id}]"
        return [(n.name, n.reason) for n in self.ctx.slurm.nodes(missing)
                if n.drain and drain.is_ours(n.reason, prefix) and n.reason.endswith(tag)]

    def _down(self, nodes: list[str]) -> list[str]:
        """The NODES Slurm has down or not responding."""
        return [n.name for n in self.ctx.slurm.nodes(nodes) if n.state == "down" or not n.responding]

    def gather(self, item: dict[str, Any], job: JobInfo | None, nodes: list[str], missing: list[str],
               view: PassView) -> Gathered:
        """Step 1: the attempt's state and exit, its findings and failed gates (of its own nodes)."""
        g = Gathered(int(item["job_id"]), int(item.get("restart_count") or 0), item, job, nodes, missing)
        g.state = job.state if g.same and job is not None and job.finished else None
        if item.get("exit_raw") is not None:
            g.exit = ExitStatus.from_wait_status(int(item["exit_raw"]))
        elif g.same and job is not None:
            g.exit = job.exit
        g.findings = view.findings.get((g.job_id, g.restart), [])
        g.gates = [x for x in view.gates.get(g.job_id, []) if not nodes or x[0] in nodes]
        if g.state is None and job is not None and job.restart_count > g.restart:
            # Slurm requeued this attempt itself (a completed attempt never is): what ended it is in accounting
            g.state = self._accounted_state(g.job_id, g.restart, nodes, missing)
        return g

    def classify(self, g: Gathered) -> policy.Classification:
        """Step 2: what ended the attempt (controller/policy.py)."""
        down: list[str] = []
        if g.state in self.ctx.rules.node_fault_states:
            down = sorted(set(self._down(g.nodes)) | (set(g.missing) if g.state == "NODE_FAIL" else set()))
        attempt = policy.Attempt(g.job_id, g.restart, g.nodes, g.state, g.exit, g.item.get("comment") or "")
        return policy.classify(attempt, g.findings, self.ctx.rules, gate_failures=g.gates, down_nodes=down,
                               drained_for_job=self._drained_for(g.job_id, g.missing))

    def ask(self, s: Session, g: Gathered) -> tuple[marker.RetryAsk | None, models.RetryChain | None]:
        """Step 3: what the job asked for (its comment's marker, or the chain `slurmtools sbatch` recorded)."""
        comment = g.item.get("comment") or (g.job.comment if g.job else "")
        limit = int(self.cfg.controller.retry_limit)
        ask = marker.parse_marker(comment, min(int(self.cfg.controller.max_retries), limit),
                                  str(self.cfg.controller.retry_on), limit=limit)
        chain = self._chain(s, g.job_id, ask, g.item.get("user") or (g.job.user if g.job else ""))
        if ask is None and chain is not None:           # recorded by `slurmtools sbatch`
            ask = marker.RetryAsk(min(chain.max_retries, limit), chain.retry_on)
        return ask, chain

    def decide(self, cls: policy.Classification, ask: marker.RetryAsk | None, chain: models.RetryChain | None,
               g: Gathered, view: PassView) -> policy.Decision:
        """Step 4: retry or not, where and when (controller/policy.py)."""
        return policy.decide(cls, ask, chain.retries_used if chain else 0,
                             already_excluded=list(g.job.excluded_nodes) if g.job else [], soft_excluded=view.soft,
                             base=float(self.cfg.controller.backoff),
                             maximum=float(self.cfg.controller.backoff_max),
                             jitter=float(self.cfg.controller.backoff_jitter), rng=self.ctx.rng)

    def breaker(self, dec: policy.Decision, cls: policy.Classification,
                job_id: int) -> tuple[policy.Decision, str | None]:
        """Step 5: more nodes implicated at once than the circuit breaker allows: a shared cause (fabric,
        filesystem, our config) for a person, not a retry. Returns the decision and its alert."""
        if dec.action != "retry" or len(cls.implicated) <= 1:
            return dec, None
        limit = self.cfg.drain_limit(len(self.ctx.slurm.nodes()))
        if len(cls.implicated) <= limit:
            return dec, None
        alert = (f"job {job_id}: {len(cls.implicated)} nodes implicated at once (circuit breaker limit "
                 f"{limit}); not retried, nothing excluded")
        return policy.Decision("no_retry", "circuit breaker: " + alert, chain_status="failed"), alert

    def resubmission(self, dec: policy.Decision, g: Gathered,
                     chain: models.RetryChain | None) -> tuple[policy.Decision, bool]:
        """Step 6: a retry of a job slurmctld forgot is a resubmission, if its submission is stored."""
        if dec.action != "retry" or g.job is not None:
            return dec, False
        refused = self.resubmitter.cannot_resubmit(chain)
        if refused:
            return policy.Decision("no_retry", "the job left slurmctld's memory (MinJobAge) before it could be "
                                               f"requeued, and it cannot be resubmitted: {refused}",
                                   chain_status="failed"), False
        return dec, True

    def _decide(self, s: Session, g: Gathered, key: str, view: PassView) -> CD:
        """Gathered G decided: classify, ask, decide, breaker, resubmission, then the row and the chain's counts,
        committed before anything is done."""
        cls = self.classify(g)
        ask, chain = self.ask(s, g)
        dec, alert = self.breaker(self.decide(cls, ask, chain, g, view), cls, g.job_id)
        dec, resubmit = self.resubmission(dec, g, chain)
        acting = bool(self.cfg.general.enabled and not self.cfg.general.observe)
        status = (state.Status.ACTING if acting else state.Status.OBSERVED) if dec.action == "retry" \
            else state.Status.DONE
        if chain is not None:
            if dec.action == "retry" and acting:
                chain.retries_used += 1
            chain.status = dec.chain_status
            if chain.id is None:
                s.flush()        # a new chain: one INSERT with its final counts, for its id
        d = self._row(g, key, cls, dec, status, chain)
        state.save(d, state.Details(
            classification=cls.to_dict(), decision=dec.to_dict(), ask=ask.marker() if ask else None, state=g.state,
            exit=str(g.exit) if g.exit else None, missing_epilogs=g.missing, item=g.item, alert=alert,
            resubmit=state.Resubmit() if resubmit else None))
        s.add(d)
        if chain is not None:
            A = models.JobAttempt
            s.execute(update(A).where(A.cluster == self.ctx.cluster, A.job_id == g.job_id,
                                      A.restart_count == g.restart).values(chain_id=chain.id))
        s.commit()
        return d

    def _row(self, g: Gathered, key: str, cls: policy.Classification, dec: policy.Decision, status: state.Status,
             chain: models.RetryChain | None) -> CD:
        """The decision row, with its step times so far."""
        ended = g.job.end_time if g.same and g.job is not None and g.job.end_time else None
        detected = datetime.fromtimestamp(float(g.item.get("enqueued") or time.time()), tz=UTC)
        return CD(idempotency_key=key, cluster=self.ctx.cluster, job_id=g.job_id, restart_count=g.restart,
                  chain_id=chain.id if chain else None, classification=cls.kind, decision=dec.action,
                  reason=dec.reason[:2000], excluded_nodes=collect(dec.exclude) if dec.exclude else "",
                  status=status.value, t_ended=ended or detected, t_detected=detected, t_decided=utcnow())
