"""What happened to a job: its retry chain from the ledger (attempts, findings, the controller's
decisions) and Slurm's view now. `slurmtools status` prints it, `slurmtools why` tells it in sentences.

Reads only: users need read access to the ledger (docs/sbatch.md says how an admin grants it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.diagnosis.findings import NODE_ACTIONS, NODE_TRUST
from slurmtools.ledger import models


def _t(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def chain(session: Session, cluster: str, job_id: int, job: Any = None) -> dict[str, Any]:
    """The chain of JOB_ID: every attempt with its nodes, times, exit, findings and decision."""
    from slurmtools.controller.engine import chain_key

    A, F, CD, C = models.JobAttempt, models.Finding, models.ControllerDecision, models.RetryChain
    attempts: dict[int, models.JobAttempt] = {}
    for row in session.scalars(select(A).where(A.cluster == cluster, A.job_id == job_id).order_by(A.id)):
        attempts[row.restart_count] = row      # the newest row of each attempt wins
    decisions = {d.restart_count: d for d in session.scalars(
        select(CD).where(CD.cluster == cluster, CD.job_id == job_id))}
    findings: dict[int, list[models.Finding]] = {}
    for f in session.scalars(select(F).where(F.cluster == cluster, F.job_id == job_id).order_by(F.id)):
        findings.setdefault(f.restart_count or 0, []).append(f)
    drains = {(c.node, str(c.details.get("job_id"))) for c in session.scalars(
        select(models.NodeStateChange).where(models.NodeStateChange.cluster == cluster,
                                             models.NodeStateChange.action == "drain",
                                             models.NodeStateChange.applied.is_(True)))}
    c = session.scalar(select(C).where(C.idempotency_key == chain_key(cluster, job_id)))
    rows = []
    for r in sorted(set(attempts) | set(decisions) | set(findings)):
        a: models.JobAttempt | None = attempts.get(r)
        d = decisions.get(r)
        node_level = [f for f in findings.get(r, []) if f.trust in NODE_TRUST and f.action in NODE_ACTIONS
                      and not (f.details or {}).get("superseded_by")]
        rows.append({
            "restart_count": r, "nodes": a.nodes if a else None, "start": _t(a.start_time) if a else None,
            "end": _t((a.end_time if a else None) or (d.t_ended if d else None)),
            "exit_code": a.exit_code if a else None, "exit_signal": a.exit_signal if a else None,
            "findings": [{"node": f.node, "kind": f.kind, "xid": f.xid, "category": f.category, "action": f.action,
                          "trust": f.trust, "message": f.message, "name": (f.details or {}).get("name")}
                         for f in (node_level or findings.get(r, []))[:5]],
            "drained": sorted({f.node for f in node_level if f.node and (f.node, str(job_id)) in drains}),
            "decision": None if d is None else {
                "classification": d.classification, "decision": d.decision, "status": d.status, "reason": d.reason,
                "excluded_nodes": d.excluded_nodes, "t_released": _t(d.t_released), "t_running": _t(d.t_running)},
        })
    now = None if job is None else {"state": job.state, "reason": job.state_reason, "restart_count": job.restart_count,
                                    "nodes": ",".join(job.nodes), "start": _t(job.start_time)}
    return {"job_id": job_id, "chain": None if c is None else {
        "max_retries": c.max_retries, "retry_on": c.retry_on, "retries_used": c.retries_used, "status": c.status},
        "attempts": rows, "now": now}


def mine(session: Session, cluster: str, user: str, jobs: dict[int, Any], limit: int = 20) -> list[dict[str, Any]]:
    """USER's retry chains, newest first: status, budget, the job in Slurm now, the last decision."""
    C, CD = models.RetryChain, models.ControllerDecision
    out = []
    for c in session.scalars(select(C).where(C.cluster == cluster, C.user == user)
                             .order_by(C.created.desc(), C.id.desc()).limit(limit)):
        last = session.scalar(select(CD).where(CD.cluster == cluster, CD.job_id == c.root_job_id)
                              .order_by(CD.restart_count.desc()).limit(1))
        job = jobs.get(c.root_job_id)
        out.append({"job_id": c.root_job_id, "status": c.status, "max_retries": c.max_retries,
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
    for a in status["attempts"]:
        n = a["restart_count"] + 1
        d = a["decision"]
        where = f" on {a['nodes']}" if a["nodes"] else ""
        if d and d["classification"] == "success":
            out.append(f"Attempt {n} completed at {_hms(a['end'])}{where}.")
            continue
        if d and d["classification"] == "evacuation":
            text = f"Attempt {n}{where} was moved: {d['reason']}."
            if d["t_released"]:
                text += f" The controller requeued it at {_hms(d['t_released'])}, away from {d['excluded_nodes']}."
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
        text = f"Attempt {n} stopped at {_hms(a['end'])}{where}: {what}."
        if a["drained"]:
            text += f" {', '.join(a['drained'])} {'was' if len(a['drained']) == 1 else 'were'} taken out of service."
        if d and d["decision"] == "retry":
            text += (f" The controller requeued the job at {_hms(d['t_released'])}" +
                     (f", away from {d['excluded_nodes']}." if d["excluded_nodes"] else "."))
        elif d:
            text += f" It was not retried: {d['reason']}."
        out.append(text)
    now = status.get("now")
    if now:
        n = now["restart_count"] + 1
        if now["state"] == "RUNNING":
            out.append(f"Attempt {n} started at {_hms(now['start'])} on {now['nodes']} and is running.")
        elif now["state"] == "PENDING":
            out.append(f"Attempt {n} is waiting to start ({now['reason']}).")
    if not out:
        return f"slurmtools has no record of job {status['job_id']}."
    return " ".join(out)
