"""What happened to a job: its retry chain from the ledger (attempts, findings, the controller's
decisions) and Slurm's view now. `slurmtools status` prints it, `slurmtools why` tells it in sentences.

Reads only: users need read access to the ledger (docs/sbatch.md says how an admin grants it).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.controller import state as decision_state
from slurmtools.diagnosis.faults import is_node_fault, node_fault_actions
from slurmtools.ledger import models

if TYPE_CHECKING:
    from sqlalchemy.engine import Row

    from slurmtools.config import Config
    from slurmtools.slurm.types import JobInfo


def _t(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


#: The retry chain columns users read. Not `details`: it holds each submission's command line, working
#: directory, environment and script copy, which only the chain's user and the admins should see
#: (docs/sbatch.md grants users these columns only).
_CHAIN_COLUMNS = ("id", "root_job_id", "user", "created", "max_retries", "retry_on", "status", "retries_used")


def _chain_row(session: Session, cluster: str, job_id: int) -> Any:
    """JOB_ID's chain, without its details column."""
    from slurmtools.ledger.chains import chain_lookups

    C = models.RetryChain
    for stmt in chain_lookups(cluster, job_id, select(*[getattr(C, c) for c in _CHAIN_COLUMNS])):
        row = session.execute(stmt).first()
        if row is not None:
            return row
    return None


def _ids(session: Session, cluster: str, job_id: int, c: Row[Any] | None) -> list[int]:
    if c is None:
        return [job_id]
    J = models.ChainJob
    later = session.scalars(select(J.job_id).where(J.cluster == cluster, J.chain_id == c.id)
                            .order_by(J.created, J.id))
    return [c.root_job_id, *[j for j in later if j != c.root_job_id]]


def job_ids(session: Session, cluster: str, job_id: int) -> list[int]:
    """Every job id of JOB_ID's retry chain, oldest first: the root, then each resubmission (a requeue keeps
    the id). Just [JOB_ID] when it has no chain."""
    return _ids(session, cluster, job_id, _chain_row(session, cluster, job_id))


def chain(session: Session, cluster: str, job_id: int, job: JobInfo | None = None,
          cfg: Config | None = None) -> dict[str, Any]:
    """The chain of JOB_ID: every attempt (of every job id the chain had) with its nodes, times, exit,
    findings and decision. JOB: the chain's newest job as Slurm knows it now, if it does. CFG: which findings
    are node faults (`controller.node_fault_actions`, as the controller reads it; default: the shipped one)."""
    actions = node_fault_actions(cfg)
    A, F, CD = models.JobAttempt, models.Finding, models.ControllerDecision
    c = _chain_row(session, cluster, job_id)
    ids = _ids(session, cluster, job_id, c)
    drains = {(c.node, str(c.details.get("job_id"))) for c in session.scalars(
        select(models.NodeStateChange).where(models.NodeStateChange.cluster == cluster,
                                             models.NodeStateChange.action == "drain",
                                             models.NodeStateChange.applied.is_(True)))}
    rows: list[dict[str, Any]] = []
    for jid in ids:
        attempts: dict[int, models.JobAttempt] = {}
        for row in session.scalars(select(A).where(A.cluster == cluster, A.job_id == jid).order_by(A.id)):
            attempts[row.restart_count] = row      # the newest row of each attempt wins
        decisions = {d.restart_count: d for d in session.scalars(
            select(CD).where(CD.cluster == cluster, CD.job_id == jid))}
        findings: dict[int, list[models.Finding]] = {}
        for f in session.scalars(select(F).where(F.cluster == cluster, F.job_id == jid).order_by(F.id)):
            findings.setdefault(f.restart_count or 0, []).append(f)
        for r in sorted(set(attempts) | set(decisions) | set(findings)):
            a: models.JobAttempt | None = attempts.get(r)
            d = decisions.get(r)
            node_level = [f for f in findings.get(r, []) if is_node_fault(f, cfg, actions=actions)]
            rows.append({
                "job_id": jid, "restart_count": r, "nodes": a.nodes if a else None,
                "start": _t(a.start_time) if a else None,
                "end": _t((a.end_time if a else None) or (d.t_ended if d else None)),
                "exit_code": a.exit_code if a else None, "exit_signal": a.exit_signal if a else None,
                "findings": [{"node": f.node, "kind": f.kind, "xid": f.xid, "category": f.category,
                              "action": f.action, "trust": f.trust, "message": f.message,
                              "name": (f.details or {}).get("name")}
                             for f in (node_level or findings.get(r, []))[:5]],
                "drained": sorted({f.node for f in node_level if f.node and (f.node, str(jid)) in drains}),
                "decision": None if d is None else {
                    "classification": d.classification, "decision": d.decision, "status": d.status,
                    "reason": d.reason, "excluded_nodes": d.excluded_nodes, "t_released": _t(d.t_released),
                    "t_running": _t(d.t_running),
                    "resubmitted_as": decision_state.of(d).resubmitted_as},
            })
    # attempt numbers run on across the chain's job ids: a resubmitted job's first attempt follows the last
    # attempt of the job it replaced; within one job id, Slurm's restart count numbers them
    offset: dict[int, int] = {}
    total = 0
    for jid in ids:
        offset[jid] = total
        total += 1 + max((x["restart_count"] for x in rows if x["job_id"] == jid), default=-1)
    for x in rows:
        x["attempt"] = offset[x["job_id"]] + x["restart_count"] + 1
    now = None if job is None else {"job_id": job.job_id, "state": job.state, "reason": job.state_reason,
                                    "restart_count": job.restart_count, "nodes": ",".join(job.nodes),
                                    "start": _t(job.start_time),
                                    "attempt": offset.get(job.job_id, total) + job.restart_count + 1}
    return {"job_id": job_id, "jobs": ids, "chain": None if c is None else {
        "max_retries": c.max_retries, "retry_on": c.retry_on, "retries_used": c.retries_used, "status": c.status},
        "attempts": rows, "now": now}


def mine(session: Session, cluster: str, user: str, jobs: dict[int, Any], limit: int = 20) -> list[dict[str, Any]]:
    """USER's retry chains, newest first: status, budget, the job in Slurm now, the last decision."""
    C, CD = models.RetryChain, models.ControllerDecision
    out = []
    for c in session.execute(select(*[getattr(C, c) for c in _CHAIN_COLUMNS]).where(C.cluster == cluster,
                                                                                      C.user == user)
                             .order_by(C.created.desc(), C.id.desc()).limit(limit)):
        newest = _ids(session, cluster, c.root_job_id, c)[-1]
        last = session.scalar(select(CD).where(CD.cluster == cluster, CD.job_id == newest)
                              .order_by(CD.restart_count.desc()).limit(1))
        job = jobs.get(newest)
        out.append({"job_id": c.root_job_id, "newest_job_id": newest, "status": c.status,
                    "max_retries": c.max_retries,
                    "retry_on": c.retry_on, "retries_used": c.retries_used, "created": _t(c.created),
                    "last": f"attempt {last.restart_count + 1}: {last.classification} -> {last.decision}"
                    if last else None,
                    "now": None if job is None else {"state": job.state, "restart_count": job.restart_count,
                                                     "nodes": ",".join(job.nodes)}})
    return out


def _hms(iso: str | None) -> str:
    return datetime.fromisoformat(iso).strftime("%H:%M:%S") if iso else "an unknown time"


def _cause(f: dict[str, Any]) -> str:
    if f["kind"] == "xid":
        return f"XID {f['xid']} on {f['node']}" + (f" ({str(f['name']).rstrip('.')})" if f.get("name") else "")
    return f"{f['kind']} on {f['node']}: {f['message'][:120]}"


def why(status: dict[str, Any]) -> str:
    """Two or three plain sentences per attempt."""
    out: list[str] = []
    several = len(status.get("jobs") or [status["job_id"]]) > 1
    for a in status["attempts"]:
        n = a["attempt"]
        d = a["decision"]
        label = f"Attempt {n}" + (f" (job {a['job_id']})" if several else "")
        where = f" on {a['nodes']}" if a["nodes"] else ""
        if d and d["classification"] == "success":
            out.append(f"{label} completed at {_hms(a['end'])}{where}.")
            continue
        if d and d["classification"] == "evacuation":
            text = f"{label}{where} was moved: {d['reason']}."
            if d["t_released"]:
                text += f" The controller requeued it at {_hms(d['t_released'])}, away from {d['excluded_nodes']}."
            out.append(text)
            continue
        if d and d["classification"] == "stall":      # the stall detector (docs/stalls.md)
            text = f"{label}{where} hung while holding its GPUs ({d['reason']})."
            if d["decision"] == "retry" and d["t_released"]:
                text += (f" The controller requeued it at {_hms(d['t_released'])}" +
                         (f", away from {d['excluded_nodes']}." if d["excluded_nodes"] else "."))
            seen = next((f for f in a["findings"] if f["kind"] == "stall"), None)
            if seen:
                text += (f" Seen: {seen['message'][:300]}; the evidence (each node's GPUs, processes and stacks) is "
                         "kept with that finding in the ledger.")
            out.append(text)
            continue
        if a["findings"] and a["findings"][0]["trust"] != "job":
            what = _cause(a["findings"][0])
        elif a["exit_signal"]:
            what = f"the job was killed by signal {a['exit_signal']}"
        elif a["exit_code"]:
            what = f"the job exited with code {a['exit_code']}"
        else:
            what = "no cause was recorded"
        text = f"{label} stopped at {_hms(a['end'])}{where}: {what}."
        if a["drained"]:
            text += f" {', '.join(a['drained'])} {'was' if len(a['drained']) == 1 else 'were'} taken out of service."
        if d and d["decision"] == "retry" and d.get("resubmitted_as"):
            text += (f" The job had left Slurm's memory, so the controller resubmitted it as job "
                     f"{d['resubmitted_as']} at {_hms(d['t_released'])}" +
                     (f", away from {d['excluded_nodes']}." if d["excluded_nodes"] else "."))
        elif d and d["decision"] == "retry" and d["status"] == "failed":
            text += f" The controller decided to retry it, but could not: {d['reason']}."
        elif d and d["decision"] == "retry":
            text += (f" The controller requeued the job at {_hms(d['t_released'])}" +
                     (f", away from {d['excluded_nodes']}." if d["excluded_nodes"] else "."))
        elif d:
            text += f" It was not retried: {d['reason']}."
        out.append(text)
    now = status.get("now")
    if now:
        n = now["attempt"]
        if now["state"] == "RUNNING":
            out.append(f"Attempt {n} started at {_hms(now['start'])} on {now['nodes']} and is running.")
        elif now["state"] == "PENDING":
            out.append(f"Attempt {n} is waiting to start ({now['reason']}).")
    if not out:
        return f"slurmtools has no record of job {status['job_id']}."
    return " ".join(out)
