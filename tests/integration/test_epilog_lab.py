"""The epilog on the lab: a fault injected during a job is found, recorded and (only if the node is
faulty) drained with our reason; application faults and job-printed errors never drain."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.lab import Lab
from slurmtools.ledger import db, models
from slurmtools.slurm import CliSlurm

from .conftest import wait_job, wait_until


def ledger_rows(lab: Lab, model: type[models.Base], **where: object) -> list[models.Base]:
    eng = db.make_engine(lab.ledger_url)
    try:
        with Session(eng) as s:
            stmt = select(model)
            for key, value in where.items():
                stmt = stmt.where(getattr(model, key) == value)
            return list(s.scalars(stmt))
    finally:
        eng.dispose()


def run_and_inject(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, fault: str | None,
                   wrap: str = "sleep 300", node: str = "n2") -> int:
    job_id = slurm.submit(["-o", str(workdir / "job.out"), "-D", str(workdir), "-w", node, "--no-requeue",
                           "--wrap", wrap])
    jobs.append(job_id)
    wait_job(slurm, job_id, lambda j: j.state == "RUNNING" or j.finished, "started")
    if fault:
        wait_until("job processes", lambda: list(lab.job_pids_on(node)))
        out = subprocess.run(["slurmtools", "lab", "inject", node, fault, "--json"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        if not json.loads(out.stdout)["killed_pids"]:
            slurm.cancel(job_id)  # a fault that kills nothing: end the job so its epilog runs now
    wait_job(slurm, job_id, lambda j: j.finished, "finished")
    return job_id


def test_xid79_finding_attempt_and_drain(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                         resume_after: list[str]) -> None:
    resume_after.append("n2")
    job_id = run_and_inject(lab, slurm, jobs, workdir, "xid79")
    findings = wait_until("the XID 79 finding in the ledger", lambda: [
        f for f in ledger_rows(lab, models.Finding, job_id=job_id) if isinstance(f, models.Finding) and f.xid == 79])
    f = findings[0]
    assert (f.node, f.kind, f.category, f.trust, f.source, f.action) == (
        "n2", "xid", "hardware", "kernel", "kernel", "drain_node")
    attempts = [a for a in ledger_rows(lab, models.JobAttempt, job_id=job_id) if isinstance(a, models.JobAttempt)]
    assert len(attempts) == 1 and attempts[0].exit_signal == 9 and f.attempt_id == attempts[0].id
    n2 = slurm.nodes(["n2"])[0]
    assert n2.drain and n2.reason.startswith("slurmtools: hardware: XID 79 GPU 0000:") and \
        n2.reason.endswith(f"[job {job_id}]")
    sinfo = subprocess.run(["sinfo", "-R", "-h", "-o", "%N|%E"], capture_output=True, text=True).stdout
    assert f"n2|{n2.reason}" in sinfo.splitlines()
    drains = wait_until("the drain in the ledger", lambda: [
        s for s in ledger_rows(lab, models.NodeStateChange, node="n2")
        if isinstance(s, models.NodeStateChange) and str(s.details.get("job_id")) == str(job_id)])
    assert drains[0].applied and drains[0].actor == "epilog" and drains[0].reason == n2.reason


def test_xid13_is_an_application_fault_node_stays(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                  workdir: Path, resume_after: list[str]) -> None:
    resume_after.append("n2")
    job_id = run_and_inject(lab, slurm, jobs, workdir, "xid13")
    findings = wait_until("the XID 13 finding", lambda: [
        f for f in ledger_rows(lab, models.Finding, job_id=job_id) if isinstance(f, models.Finding) and f.xid == 13])
    assert findings[0].category == "application" and findings[0].node == "n2"
    n2 = slurm.nodes(["n2"])[0]
    assert not n2.drain, n2.reason


def test_nccl_error_in_job_output_is_trust_job_no_drain(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                        workdir: Path, resume_after: list[str]) -> None:
    resume_after.append("n2")
    wrap = ("echo 'NCCL WARN NET/IB : Got completion from peer 10.0.0.2<51234> with error 12, opcode 0'; "
            "echo 'RuntimeError: CUDA error: uncorrectable ECC error encountered'; exit 1")
    job_id = run_and_inject(lab, slurm, jobs, workdir, None, wrap=wrap)
    findings = wait_until("the job-output findings", lambda: [
        f for f in ledger_rows(lab, models.Finding, job_id=job_id)
        if isinstance(f, models.Finding) and f.trust == "job" and f.kind in {"nccl", "cuda"}])
    assert {f.kind for f in findings} == {"nccl", "cuda"} and all(f.source == "job-log" for f in findings)
    assert not slurm.nodes(["n2"])[0].drain


FAULT_EXPECTATIONS = [
    # fault, the finding's kind, its XID, whether the node leaves service
    ("xid48", "xid", 48, True),
    ("xid94", "xid", 94, False),
    ("nvlink", "xid", 74, True),
    ("ib-down", "ib", None, False),   # recorded; the next prolog's link check decides on the port's state
    ("oom", "oom", None, False),
    ("nfs-hang", "nfs", None, False),
]


def test_each_lab_fault_through_the_epilog(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                           resume_after: list[str]) -> None:
    resume_after.append("n3")
    for fault, kind, xid, drains in FAULT_EXPECTATIONS:
        job_id = run_and_inject(lab, slurm, jobs, workdir, fault, node="n3")
        found = wait_until(f"the {fault} finding", lambda j=job_id, k=kind, x=xid: [  # type: ignore[misc]
            f for f in ledger_rows(lab, models.Finding, job_id=j)
            if isinstance(f, models.Finding) and f.kind == k and f.xid == x])
        assert found[0].node == "n3" and found[0].trust == "kernel", fault
        n3 = slurm.nodes(["n3"])[0]
        assert n3.drain == drains, (fault, n3.reason)
        if n3.drain:
            assert n3.reason.startswith("slurmtools: hardware: ") and f"[job {job_id}]" in n3.reason
            slurm.resume(["n3"])
        lab.inject("n3", "reboot")      # the fault's hardware state (lab/hardware.py) cleared for the next one
