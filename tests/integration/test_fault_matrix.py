"""The fault matrix: one row per fault, each injected on the real lab into a running job submitted with
`slurmtools sbatch --max-retries 2`, each with the outcome an operator expects asserted: the node drained or
not (and with which reason), the job requeued away from the node, retried, or left alone; its decision recorded
exactly once; no other node drained. Each row's result goes to <lab state>/fault-matrix.json (the `matrix`
fixture), from which `python bench/reliability_doc.py` writes docs/reliability.md (scripts/test.sh does it after
the suite). The loop's own failures (spool, epilog, controller, slurmctld, clocks) are rows in
test_fault_matrix_loop.py.

The job: attempt 0 waits for a file GO (its exit code; GO.msg, if present, is printed first, as the job's own
output), later attempts exit 0. A fault that kills the job's processes (a GPU gone, the OOM killer) ends
attempt 0 by itself; for the others the row writes GO."""

from __future__ import annotations

import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from slurmtools.lab import Lab
from slurmtools.ledger import models
from slurmtools.slurm import CliSlurm, expand

from .conftest import wait_job, wait_until
from .test_epilog_lab import ledger_rows

NCCL = ("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4211, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600347 "
        "milliseconds before timing out.")


@dataclass(frozen=True)
class Row:
    name: str
    faults: tuple[str, ...]        # `slurmtools lab inject` faults, in order ("" for none)
    go: int | None                 # exit code written to GO after the faults (None: the fault kills the job)
    drain: str | None              # the node's expected reason prefix, or None: not drained
    job: str                       # requeued_away | retried | completed | not_retried
    classification: str
    msg: str = ""                  # printed by the job before it exits (its own output)
    why: str = ""


DRAIN = "slurmtools: hardware: XID"
ROWS = [
    Row("XID 79 (fallen off the bus)", ("xid79",), None, f"{DRAIN} 79", "requeued_away", "node_fault"),
    Row("XID 48 (double-bit ECC)", ("xid48",), None, f"{DRAIN} 48", "requeued_away", "node_fault"),
    Row("XID 94 (contained ECC)", ("xid94",), None, None, "retried", "transient",
        why="contained: the application restarts, the GPU stays"),
    Row("XID 95 (uncontained ECC)", ("xid95",), None, f"{DRAIN} 95", "requeued_away", "node_fault"),
    Row("XID 63 (row remap pending)", ("xid63",), 0, None, "completed", "success",
        why="the running job survives; the remap takes at the next reset"),
    Row("XID 64 (row remap failure)", ("xid64",), None, f"{DRAIN} 64", "requeued_away", "node_fault"),
    Row("XID 74 (NVLink)", ("xid74",), None, f"{DRAIN} 74", "requeued_away", "node_fault"),
    Row("XID 13 (graphics exception)", ("xid13",), None, None, "retried", "transient",
        why="an application XID: retried within the budget, nothing drained"),
    Row("XID 31 (MMU fault)", ("xid31",), None, None, "retried", "transient"),
    Row("XID 43 (GPU stopped processing)", ("xid43",), None, None, "retried", "transient"),
    Row("XID 45 (preemptive cleanup)", ("xid45",), None, None, "not_retried", "app_fault",
        why="a cleanup after the application's own end: nothing to retry for"),
    Row("XID 119 (GSP timeout)", ("xid119",), None, "slurmtools: driver: XID 119", "requeued_away", "node_fault"),
    Row("XID 154 (recovery: node reboot)", ("xid154",), None, f"{DRAIN} 154", "requeued_away", "node_fault"),
    Row("NVLink fatal error + XID 74", ("nvlink",), None, f"{DRAIN} 74", "requeued_away", "node_fault"),
    Row("IB port down, job fails", ("ib-down",), 1, None, "not_retried", "app_fault",
        why="one link-down line is not proof against the node (a switch reboots too); the next prolog gate "
            "checks the port"),
    Row("IB link flapping, job fails", ("ib-flap",), 1, None, "not_retried", "app_fault"),
    Row("NFS server not responding, then OK", ("nfs-hang", "nfs-ok"), 0, None, "completed", "success",
        why="the server's problem, not the node's"),
    Row("OOM kill", ("oom",), None, None, "not_retried", "app_fault", why="the same job would be killed again"),
    Row("NCCL watchdog timeout in the job's output", (), 1, None, "retried", "transient", msg=NCCL,
        why="the job's own output decides a retry, never a drain"),
    Row("Job exits 93 (do not requeue)", (), 93, None, "not_retried", "no_requeue"),
]

JOB = """#!/bin/bash
echo "attempt ${SLURM_RESTART_COUNT:-0} on $SLURMD_NODENAME"
if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then
    while [ ! -e GO ]; do sleep 0.2; done
    [ -e GO.msg ] && cat GO.msg
    exit "$(cat GO)"
fi
exit 0
"""


def st(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["slurmtools", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def start_job(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str]) -> tuple[int, str]:
    """The row's job, submitted with `slurmtools sbatch --max-retries 2` and running: (job id, its node). Every
    node is resumed after the row (the fixture), whichever the fault drained."""
    script = workdir / "job.sh"
    script.write_text(JOB)
    script.chmod(0o755)
    sub = st("sbatch", "--parsable", "--max-retries", "2", "-N1", "-o", str(workdir / "job.out"),
             "--open-mode=append", "-D", str(workdir), str(script), cwd=workdir)
    assert sub.returncode == 0, sub.stderr
    job_id = int(sub.stdout.strip().split(";")[0])
    jobs.append(job_id)
    node = wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running").nodes[0]
    resume_after.extend(n.name for n in slurm.nodes())
    wait_until("job processes", lambda: list(lab.job_pids_on(node)))
    return job_id, node


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_fault(row: Row, lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str],
               controller: subprocess.Popen[str], matrix: list[dict[str, Any]]) -> None:
    record: dict[str, Any] = {**asdict(row), "group": "job", "result": "failed"}
    matrix.append(record)
    job_id, node = start_job(lab, slurm, jobs, workdir, resume_after)
    others_before = {n.name for n in slurm.nodes() if n.drain}
    for fault in row.faults:
        r = subprocess.run(["slurmtools", "lab", "inject", node, fault], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    if row.msg:
        (workdir / "GO.msg").write_text(row.msg + "\n")
    if row.go is not None:
        (workdir / "GO").write_text(f"{row.go}\n")
    else:
        (workdir / "GO").write_text("1\n")         # in case the fault's kill missed a process: the job still ends
    decision = wait_until("the controller's decision on attempt 0", lambda: _decision(lab, job_id), timeout=120)
    record["decision"] = {"classification": decision.classification, "decision": decision.decision,
                          "reason": decision.reason}
    if row.job in ("requeued_away", "retried"):
        done = wait_job(slurm, job_id, lambda j: j.state == "COMPLETED" and j.restart_count == 1,
                        "the retry completed", timeout=120)
        if row.job == "requeued_away":
            assert node not in done.nodes and node in done.excluded_nodes
        else:
            assert node not in done.excluded_nodes                       # retried, nothing excluded
    else:
        done = wait_job(slurm, job_id, lambda j: j.finished, "ended", timeout=60)
        time.sleep(2)
        assert slurm.job(job_id).restart_count == 0                      # not requeued
        if row.job == "completed":
            assert done.state == "COMPLETED"
    assert decision.classification == row.classification, decision.reason
    info = slurm.nodes([node])[0]
    if row.drain:
        assert info.drain and info.reason.startswith(row.drain), info.reason
    else:
        assert not info.drain, info.reason
    drained_now = {n.name for n in slurm.nodes() if n.drain} - others_before - {node}
    assert not drained_now, f"other nodes drained: {drained_now}"        # no healthy node drained
    assert len(decisions_of(lab, job_id)) == 1                                                  # decided exactly once
    record.update({"result": "passed", "node": node, "drained": bool(info.drain),
                   "reason": info.reason or None, "restart_count": slurm.job(job_id).restart_count})


def decisions_of(lab: Lab, job_id: int) -> list[models.ControllerDecision]:
    """The ledger's decisions on the job's attempt 0."""
    return [d for d in ledger_rows(lab, models.ControllerDecision, job_id=job_id)
            if isinstance(d, models.ControllerDecision) and d.restart_count == 0]


def _decision(lab: Lab, job_id: int) -> models.ControllerDecision | None:
    return next((d for d in decisions_of(lab, job_id) if d.status in ("done", "failed")), None)


def _kill_node(lab: Lab, node: str) -> None:
    """The node dies: its slurmd, the job steps' slurmstepd and the job's processes, all SIGKILLed."""
    import os
    import signal as sig

    from slurmtools.lab.procs import read_pid

    pids = [pid for pid, _ in lab.job_pids_on(node)]
    parents = set()
    for pid in pids:
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if Path(f"/proc/{ppid}/comm").read_text().strip().startswith("slurmstepd"):
            parents.add(ppid)
    slurmd = read_pid(lab.root / "run" / f"slurmd-{node}.pid")
    for pid in [*(p for p in [slurmd] if p), *parents, *pids]:
        try:
            os.kill(pid, sig.SIGKILL)
        except ProcessLookupError:
            pass


def test_node_lost_mid_job_and_back(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                    resume_after: list[str], controller: subprocess.Popen[str],
                                    matrix: list[dict[str, Any]]) -> None:
    """The node's slurmd and the job's processes die (a node crash): Slurm ends the attempt NODE_FAIL, the
    controller retries the job away from it; the node's slurmd comes back."""
    row = Row("Node lost mid-job (NODE_FAIL), then back", ("slurmd killed",), None, None, "requeued_away",
              "node_fault", why="Slurm marks the node down and requeues; the decision excludes it; back, it "
                                "returns to service and the prolog gate checks it before its next job")
    record: dict[str, Any] = {**asdict(row), "group": "job", "result": "failed"}
    matrix.append(record)
    job_id, node = start_job(lab, slurm, jobs, workdir, resume_after)
    try:
        _kill_node(lab, node)
        decision = wait_until("the controller's decision on attempt 0", lambda: _decision(lab, job_id), timeout=180)
        record["decision"] = {"classification": decision.classification, "decision": decision.decision,
                              "reason": decision.reason}
        done = wait_job(slurm, job_id, lambda j: j.state == "COMPLETED" and j.restart_count >= 1,
                        "the retry completed", timeout=180)
    finally:
        lab.start_slurmds()
    assert decision.classification == "node_fault", decision.reason
    # Slurm requeued the job itself (the node was down) and may have started the retry before our decision
    # (which waits for the dead node's epilog): the retry ran elsewhere, and the decision excluded the node
    assert node not in done.nodes and node in expand(decision.excluded_nodes or "")
    back = wait_until("the node registered again", lambda: (n := slurm.nodes([node])[0]).state != "down" and n,
                      timeout=120)
    assert not back.drain, back.reason                   # back in service: the prolog gate checks it next job
    assert len(decisions_of(lab, job_id)) == 1
    record.update({"result": "passed", "node": node, "drained": bool(back.drain), "reason": back.reason or None,
                   "restart_count": done.restart_count})
