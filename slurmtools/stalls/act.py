"""Acting on a stalled job, through the same rails as everything else.

Always: a ledger finding (kind `stall`, source `stalls`, trust `metrics`, the suspect as its node; the verdict
and the evidence in its details, bounded; one per attempt), so `slurmtools why JOB` tells what was seen.

Only in act mode (`stalls.act = true`, `general.observe = false`, `general.enabled = true`), and only for a job
that asked for retries (a `slurmtools=retry` marker or a `slurmtools sbatch` chain):

1. a `controller_decisions` row (classification `stall`, decision `retry`), committed first, counted against
   the chain's retry budget (`retries_used + 1`), the suspect added to the job's excluded nodes (so it stays
   excluded for every later attempt of the chain: the controller always keeps a job's exclusions);
2. the emergency-checkpoint signal the wrapper recorded (`slurmtools sbatch --checkpoint-signal SIG[@GRACE]`;
   a hung job rarely saves, but some do);
3. the controller finishes it as it finishes an evacuation (controller/evacuate.py): after the grace,
   requeuehold, the exclusions, release, verify (so `controller.evacuate` must be on);
4. a deep check of the suspect is scheduled (`stalls.deep_check`): it runs once no job is on the node; a
   failed one asks for a drain through `drain.request_drain`. No suspect: nobody excluded, nothing checked.

A chain whose budget is spent: the job is cancelled (it holds its GPUs for nothing) and the chain fails. Never
more than the circuit breaker allows: no action while the breaker is open, and more jobs stalled in one pass
than the breaker's limit is a shared cause (a filesystem, the fabric): recorded and alerted, nothing done."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools import drain
from slurmtools.controller import state
from slurmtools.controller.base import CD
from slurmtools.controller.evacuate import signal
from slurmtools.jobs import marker
from slurmtools.ledger import models
from slurmtools.ledger.chains import chain_key, decision_key, find_chain
from slurmtools.ledger.spool import Event, make_key
from slurmtools.slurm import SlurmError, collect

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy.engine import Engine

    from slurmtools.config import Config
    from slurmtools.slurm.base import Slurm

    #: (verdict: ok | fail | unknown, what it said) for a node: controller.recovery.run_deep_check's shape.
    DeepCheck = Callable[[Config, str], tuple[str, dict[str, Any]]]

log = logging.getLogger(__name__)

#: Evidence kept in the finding's details (the rest is cut, and says so).
MAX_EVIDENCE = 256 * 1024


def bounded(evidence: dict[str, Any]) -> dict[str, Any]:
    """EVIDENCE, with the py-spy stacks cut first, then the process lists, until it fits MAX_EVIDENCE."""
    text = json.dumps(evidence, default=str)
    if len(text) <= MAX_EVIDENCE:
        return evidence
    ev: dict[str, Any] = json.loads(text)
    for key in ("stacks", "processes"):
        for node in (ev.get("nodes") or {}).values():
            if isinstance(node, dict) and node.get(key):
                node[key] = {k: v[:2000] for k, v in list(node[key].items())[:2]} if key == "stacks" \
                    else node[key][:40]
                node[f"{key}_cut"] = True
        if len(json.dumps(ev, default=str)) <= MAX_EVIDENCE:
            return ev
    return {k: ev[k] for k in ("why", "gpu", "limits", "blame") if k in ev} | {"cut": "evidence too large"}


def finding_event(cfg: Config, r: dict[str, Any]) -> Event:
    sus = r.get("suspect")
    msg = (f"stalled: no progress for {r['quiet_s']:.0f}s (allowed {r['allowed_s']:.0f}s), GPUs {r['gpu']}; "
           + (f"suspect {sus} ({', '.join((r['evidence'].get('blame') or {}).get(sus, []))} differ)" if sus
              else "no suspect"))
    data = {"node": sus, "job_id": r["job_id"], "restart_count": r["restart_count"], "source": "stalls",
            "kind": "stall", "category": "unknown", "severity": "error", "action": "investigate", "trust": "metrics",
            "message": msg[:2000], "details": {"verdict": {k: r[k] for k in ("stalled", "suspect", "quiet_s",
                                                                             "allowed_s", "gpu", "nodes")},
                                               "evidence": bounded(r["evidence"])}}
    key = make_key("stalls", cfg.cluster, r["job_id"], r["restart_count"])
    return Event("finding", data, cluster=cfg.cluster, key=key)


def acting(cfg: Config) -> bool:
    return cfg.stalls.act and cfg.general.enabled and not cfg.general.observe


def act_on(cfg: Config, slurm: Slurm, engine: Engine, results: list[dict[str, Any]]) -> tuple[list[Event],
                                                                                         list[dict[str, Any]]]:
    """The events to record and, per stalled job, what was done (`outcome`: observe, requeued, gave_up,
    not_managed, already, breaker_open, shared_cause, evacuate_off, error)."""
    stalled = [r for r in results if r["stalled"]]
    events = [finding_event(cfg, r) for r in stalled]
    out: list[dict[str, Any]] = []
    if not stalled:
        return events, out
    base = {"observe": not acting(cfg)}
    nodes = slurm.nodes()
    limit = cfg.drain_limit(len(nodes))
    refuse = None
    if acting(cfg):
        if len(stalled) > limit:
            refuse = ("shared_cause", f"{len(stalled)} jobs stalled at once (circuit breaker limit {limit}): a shared "
                                      "cause (filesystem, fabric); nothing done, a person decides")
        elif len(drain.drained_by_us(nodes, cfg.reason_prefix)) >= limit:
            refuse = ("breaker_open", "circuit breaker open: no stall action")
        elif not cfg.controller.evacuate:
            refuse = ("evacuate_off", "controller.evacuate is off: the controller would not finish a requeue")
    for r in stalled:
        row = {"job_id": r["job_id"], "restart_count": r["restart_count"], "suspect": r["suspect"],
               "quiet_s": r["quiet_s"], "gpu": r["gpu"], "nodes": r["nodes"], "partition": r.get("partition", "")}
        if not acting(cfg):
            out.append({**row, **base, "outcome": "observe"})
            continue
        if refuse:
            log.error("stalls: job %s: %s", r["job_id"], refuse[1])
            out.append({**row, "outcome": refuse[0], "detail": refuse[1]})
            continue
        try:
            outcome = _requeue(cfg, slurm, engine, r)
        except (SlurmError, OSError) as exc:
            outcome = {"outcome": "error", "detail": str(exc)[:300]}
        out.append({**row, **outcome})
    return events, out


def _requeue(cfg: Config, slurm: Slurm, engine: Engine, r: dict[str, Any]) -> dict[str, Any]:
    job_id, restart, sus = int(r["job_id"]), int(r["restart_count"]), r.get("suspect")
    job = slurm.job(job_id)
    if job is None or job.state != "RUNNING" or job.restart_count != restart:
        return {"outcome": "already", "detail": "the attempt is no longer running"}
    key = decision_key(cfg.cluster, job_id, restart)
    now = datetime.now(UTC)
    with Session(engine, expire_on_commit=False) as s:
        if s.scalar(select(CD.id).where(CD.idempotency_key == key)) is not None:
            return {"outcome": "already", "detail": "a decision exists for this attempt"}
        chain = find_chain(s, cfg.cluster, job_id)
        ask = marker.parse_marker(job.comment, cfg.controller.max_retries,
                                  cfg.controller.retry_on)
        if chain is None and ask is not None and not ask.opted_out:
            chain = models.RetryChain(idempotency_key=chain_key(cfg.cluster, job_id), cluster=cfg.cluster,
                                      root_job_id=job_id, user=job.user or None, created=now,
                                      max_retries=ask.max_retries, retry_on=ask.retry_on, status="active",
                                      retries_used=0, details={"marker": ask.marker(), "source": "comment"})
            s.add(chain)
            s.flush()
        if chain is None or chain.status != "active":
            return {"outcome": "not_managed", "detail": "the job did not ask for retries: told, not requeued"}
        last = datetime.fromtimestamp(r["last_progress"], UTC) if r.get("last_progress") else now
        why = (f"stalled: no progress for {r['quiet_s']:.0f}s while its GPUs were {r['gpu']}"
               + (f"; suspect {sus}" if sus else "; no suspect"))
        base = dict(idempotency_key=key, cluster=cfg.cluster, job_id=job_id, restart_count=restart,
                    chain_id=chain.id, classification="stall", t_ended=last, t_detected=now, t_decided=now)
        if chain.retries_used >= chain.max_retries:
            chain.status = "failed"
            d = CD(**base, decision="no_retry", reason=f"{why}; retry budget spent ({chain.retries_used} of "
                                                        f"{chain.max_retries} used): cancelled"[:2000],
                   excluded_nodes="", status=state.Status.DONE.value,
                   details=state.dump(state.Details(stall=_brief(r), state=job.state)))
            s.add(d)
            s.commit()
            slurm.cancel(job_id)
            return {"outcome": "gave_up", "detail": d.reason}
        ckpt = (chain.details or {}).get("checkpoint") or {}
        sig, grace = str(ckpt.get("signal") or ""), float(ckpt.get("grace") or 0) if ckpt.get("signal") else 0.0
        exclude = sorted(set(job.excluded_nodes) | ({sus} if sus else set()))
        chain.retries_used += 1
        d = CD(**base, decision="retry", reason=(why + (f"; checkpoint signal {sig}, {grace:.0f}s grace" if sig else "")
                                                  + "; requeued" + (f" away from {sus}" if sus else ""))[:2000],
               excluded_nodes=collect(exclude) if exclude else "", status=state.Status.EVACUATING.value)
        evac = state.Evacuate(signal=sig or None, grace=grace, nodes=[sus] if sus else [])
        details = state.Details(evacuate=evac, decision={"delay_s": 0}, stall=_brief(r), state=job.state)
        state.save(d, details)
        s.add(d)
        s.commit()        # on record before the signal: a restarted service or controller never does it twice
        signal(slurm, job_id, evac)
        state.save(d, details)
        s.commit()
    return {"outcome": "requeued", "detail": d.reason, "excluded": exclude, "deep_check": bool(sus)}


def _brief(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r.get(k) for k in ("suspect", "quiet_s", "allowed_s", "gpu", "last_progress")}


# ---------------------------------------------------------------- deep checks of suspects

def schedule(pending: dict[str, Any], outcomes: list[dict[str, Any]], cfg: Config) -> None:
    if not cfg.stalls.deep_check:
        return
    for o in outcomes:
        if o.get("outcome") == "requeued" and o.get("suspect"):
            pending.setdefault(o["suspect"], {"job_id": o["job_id"], "since": time.time()})


def run_deep_checks(cfg: Config, slurm: Slurm, pending: dict[str, Any], busy: set[str],
                    check: DeepCheck | None = None) -> tuple[list[Event], list[dict[str, Any]]]:
    """Deep-check the pending suspects no job runs on; a failed check asks for a drain (safety rails)."""
    from slurmtools.controller.recovery import run_deep_check

    check = check or run_deep_check
    events: list[Event] = []
    done: list[dict[str, Any]] = []
    for node in sorted(pending):
        entry = pending[node]
        if time.time() - float(entry.get("since") or 0) > 7 * 86400:
            del pending[node]
            continue
        if node in busy:
            continue
        verdict, info = check(cfg, node)
        if verdict == "unknown":
            continue       # could not run: try again next pass
        del pending[node]
        events.append(Event("node_state", {"node": node, "action": "deep_check", "actor": "stalls",
                                           "reason": f"deep check after stall of job {entry.get('job_id')}: "
                                                     f"{verdict}", "applied": True,
                                           "details": {"verdict": verdict, "job_id": entry.get("job_id"), **info}},
                            cluster=cfg.cluster))
        row = {"node": node, "verdict": verdict, "job_id": entry.get("job_id")}
        if verdict == "fail":
            decision, evs = drain.request_drain(node, "hardware", f"deep check failed after job "
                                                 f"{entry.get('job_id')} stalled with it as suspect",
                                                 job_id=entry.get("job_id"), actor="stalls", cfg=cfg, slurm=slurm,
                                                 evidence={"failed": info.get("failed")})
            events.extend(evs)
            row["drain"] = decision.outcome
        done.append(row)
    return events, done
