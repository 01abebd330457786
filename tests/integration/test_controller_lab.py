"""The whole loop on the lab: a fault during a job -> epilog finding and drain -> EpilogSlurmctld enqueues ->
the controller requeues the same job id away from the faulty node -> it runs elsewhere and completes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from slurmtools.lab import Lab
from slurmtools.ledger import models
from slurmtools.slurm import CliSlurm

from .conftest import matrix_row, wait_idle, wait_job, wait_until
from .test_epilog_lab import ledger_rows


def decisions(lab: Lab, job_id: int) -> list[models.ControllerDecision]:
    rows = ledger_rows(lab, models.ControllerDecision, job_id=job_id)
    return sorted((r for r in rows if isinstance(r, models.ControllerDecision)), key=lambda d: d.restart_count)


def inject(node: str, fault: str) -> dict[str, object]:
    out = subprocess.run(["slurmtools", "lab", "inject", node, fault, "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def submit(slurm: CliSlurm, jobs: list[int], workdir: Path, *args: str) -> int:
    job_id = slurm.submit(["-o", str(workdir / "job.out"), "--open-mode=append", "-D", str(workdir), *args])
    jobs.append(job_id)
    return job_id


def test_node_fault_requeues_the_job_away_from_the_node(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                        workdir: Path, resume_after: list[str],
                                                        controller: subprocess.Popen[str]) -> None:
    script = workdir / "train.sh"
    script.write_text("#!/bin/sh\necho \"attempt ${SLURM_RESTART_COUNT:-0} on $SLURM_JOB_NODELIST\"\n"
                      "[ \"${SLURM_RESTART_COUNT:-0}\" = 0 ] && sleep 300\nexit 0\n")
    job_id = submit(slurm, jobs, workdir, "-N2", "--requeue", "--comment", "exp-1 slurmtools=retry:2", str(script))
    job = wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running")
    bad = job.batch_host or job.nodes[0]   # the batch script runs there: the fault kills the job
    resume_after.extend(job.nodes)
    wait_until("job processes", lambda: list(lab.job_pids_on(bad)))
    t_fault = time.time()
    inject(bad, "xid79")
    done = wait_job(slurm, job_id, lambda j: j.state == "COMPLETED", "completed on other nodes", timeout=120)
    assert done.restart_count == 1 and bad not in done.nodes and bad in done.excluded_nodes
    info = slurm.nodes([bad])[0]
    assert info.drain and info.reason.startswith("slurmtools: hardware: XID 79")
    out = (workdir / "job.out").read_text()
    assert "attempt 0 on" in out and "attempt 1 on" in out        # --open-mode=append kept both attempts
    (d0,) = [d for d in decisions(lab, job_id) if d.restart_count == 0]
    assert (d0.classification, d0.decision, d0.status, d0.excluded_nodes) == ("node_fault", "retry", "done", bad)
    assert None not in (d0.t_detected, d0.t_decided, d0.t_requeued, d0.t_released, d0.t_verified)
    assert d0.t_detected <= d0.t_decided <= d0.t_requeued <= d0.t_released <= d0.t_verified
    assert d0.t_verified.timestamp() - t_fault < 30, "our part of the recovery took too long"
    wait_until("t_running", lambda: decisions(lab, job_id)[0].t_running)
    chains = [c for c in ledger_rows(lab, models.RetryChain, root_job_id=job_id) if isinstance(c, models.RetryChain)]
    attempts = wait_until("both attempts in the ledger", lambda: sorted(
        (a.restart_count, a.chain_id) for a in ledger_rows(lab, models.JobAttempt, job_id=job_id)
        if isinstance(a, models.JobAttempt)) if len(ledger_rows(lab, models.JobAttempt, job_id=job_id)) >= 2 else None)
    assert len(chains) == 1 and chains[0].retries_used == 1
    assert [r for r, _ in attempts] == [0, 1] and attempts[0][1] == chains[0].id
    calls = (lab.root / "log" / "slurm-calls.log").read_text().splitlines()
    assert sum(f"requeuehold {job_id}" in c for c in calls) == 1
    status = json.loads(subprocess.run(["slurmtools", "status", str(job_id), "--json"], capture_output=True,
                                       text=True, check=True).stdout)
    assert status["chain"]["retries_used"] == 1 and status["attempts"][0]["drained"] == [bad]
    why = subprocess.run(["slurmtools", "why", str(job_id)], capture_output=True, text=True, check=True).stdout
    assert f": XID 79 on {bad} (GPU has fallen off the bus). {bad} was taken out of service. The controller " \
           f"requeued the job at " in why and f"away from {bad}." in why, why


def test_application_failure_retried_only_when_asked(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                                     controller: subprocess.Popen[str]) -> None:
    plain = submit(slurm, jobs, workdir, "--requeue", "--comment", "slurmtools=retry", "--wrap", "exit 1")
    anyfail = submit(slurm, jobs, workdir, "--requeue", "--comment", "slurmtools=retry:2:any", "--wrap", "exit 1")
    wait_until("the plain job's decision", lambda: decisions(lab, plain))
    (d,) = decisions(lab, plain)
    assert (d.classification, d.decision) == ("app_fault", "no_retry")
    assert slurm.job(plain).restart_count == 0
    wait_until("three decisions for the retry-on-any job", lambda: len(decisions(lab, anyfail)) == 3, timeout=120)
    ds = decisions(lab, anyfail)
    assert [(x.restart_count, x.decision) for x in ds] == [(0, "retry"), (1, "retry"), (2, "no_retry")]
    assert ds[-1].reason == "retry budget spent (2 of 2 used)"
    (chain,) = [c for c in ledger_rows(lab, models.RetryChain, root_job_id=anyfail) if isinstance(c, models.RetryChain)]
    assert (chain.status, chain.retries_used) == ("failed", 2)


def test_faults_everywhere_trip_the_circuit_breaker(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                                    resume_after: list[str], matrix: list[dict[str, Any]]) -> None:
    """A row of the fault matrix: XID 79 on every node of a running job at once (a broken driver update)."""
    with matrix_row(matrix, "XID 79 on every node at once (4 of 4, one job)", node="2 drained (the breaker's limit), "
                    "2 refused", job="not retried, nothing excluded; alert", why="a shared cause: a human decides"):
        _faults_everywhere(lab, slurm, jobs, workdir, resume_after)


def _faults_everywhere(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str]) -> None:
    nodes = [n.name for n in slurm.nodes()]
    resume_after.extend(nodes)
    wait_idle(slurm)
    job_id = submit(slurm, jobs, workdir, f"-N{len(nodes)}", "--ntasks-per-node=1", "--requeue", "--comment",
                    "slurmtools=retry", "--wrap", "srun sleep 300")
    wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running")
    for node in nodes:
        wait_until(f"job processes on {node}", lambda node=node: list(lab.job_pids_on(node)))
    for node in nodes:
        inject(node, "xid79")
    wait_job(slurm, job_id, lambda j: j.finished, "finished")
    refused = wait_until("the refused drains in the ledger", lambda: [
        c for c in ledger_rows(lab, models.NodeStateChange, action="drain")
        if isinstance(c, models.NodeStateChange) and str(c.details.get("job_id")) == str(job_id)
        and c.details.get("outcome") == "breaker_open"] if len([
            c for c in ledger_rows(lab, models.NodeStateChange, action="drain")
            if isinstance(c, models.NodeStateChange) and str(c.details.get("job_id")) == str(job_id)]) == 4 else None)
    drained = [n.name for n in slurm.nodes() if n.drain and n.reason.startswith("slurmtools:")]
    assert len(drained) == 2 and len(refused) == 2
    shown = subprocess.run(["slurmtools", "nodes"], capture_output=True, text=True)
    assert "CIRCUIT BREAKER OPEN: 2 of 4 nodes drained by slurmtools (limit 2)" in shown.stderr
    once = wait_until("the controller's decision", lambda: (
        lambda r: r if r.returncode != 0 and "circuit breaker" in r.stdout else None)(
        subprocess.run(["slurmtools", "controller", "once", "--no-recovery"], capture_output=True, text=True)),
        timeout=60, every=1)
    assert once.returncode == 3 and "CIRCUIT BREAKER OPEN" in once.stderr
    (d,) = decisions(lab, job_id)
    assert d.decision == "no_retry" and "4 nodes implicated at once" in d.reason
    assert slurm.job(job_id).restart_count == 0           # not requeued onto nothing


def test_killed_mid_flow_requeues_once(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                       resume_after: list[str], tmp_path: Path) -> None:
    """`scontrol update` fails after the requeue (a controller dying there): the next pass finishes the
    flow from the ledger without a second requeue."""
    broken = tmp_path / "bin"
    broken.mkdir()
    for tool in ("sinfo", "squeue", "sbatch", "sacct", "sacctmgr", "scancel", "scontrol"):
        body = f'exec {lab.root}/bin/{tool} "$@"'
        if tool == "scontrol":
            body = f'[ "$1" = update ] && case "$2" in jobid=*) exit 1;; esac\n{body}'
        (broken / tool).write_text(f"#!/bin/sh\n{body}\n")
        (broken / tool).chmod(0o755)
    job_id = submit(slurm, jobs, workdir, "-w", "n3", "--requeue", "--comment", "slurmtools=retry", "--wrap",
                    "sleep 300")
    resume_after.append("n3")
    wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running")
    wait_until("job processes", lambda: list(lab.job_pids_on("n3")))
    inject("n3", "xid79")
    wait_job(slurm, job_id, lambda j: j.finished, "finished")
    env = {**os.environ, "SLURMTOOLS_SLURM_BIN_DIR": str(broken)}

    def pass_with(e: dict[str, str]) -> dict[str, object]:
        out = subprocess.run(["slurmtools", "controller", "once", "--json", "--no-recovery"], capture_output=True,
                             text=True, env=e)
        return dict(json.loads(out.stdout))

    first = wait_until("a decision", lambda: (lambda r: r if any(
        d["job_id"] == job_id for d in r["decisions"]) else None)(pass_with(env)), timeout=60)  # type: ignore[union-attr]
    assert [d["status"] for d in first["decisions"] if d["job_id"] == job_id] == ["acting"]   # type: ignore[union-attr]
    assert slurm.job(job_id).restart_count == 1
    second = pass_with(dict(os.environ))
    assert [d["status"] for d in second["decisions"] if d["job_id"] == job_id] == ["done"]   # type: ignore[union-attr]
    job = slurm.job(job_id)
    assert job.restart_count == 1 and "n3" in job.excluded_nodes
    calls = (lab.root / "log" / "slurm-calls.log").read_text().splitlines()
    assert sum(f"requeuehold {job_id}" in c for c in calls) == 1
