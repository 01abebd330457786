"""The Slurm access layer and the lab, on the real 4-node cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from slurmtools.lab import Lab
from slurmtools.slurm import CliSlurm, ExitStatus

from .conftest import wait_job, wait_until


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["slurmtools", *args], capture_output=True, text=True, timeout=60)


def test_lab_status_and_nodes_json(lab: Lab) -> None:
    status = cli("lab", "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    daemons = {row["daemon"]: row for row in json.loads(status.stdout)}
    assert {"munged", "mariadb", "slurmdbd", "slurmctld", "postgresql"} <= set(daemons)
    assert all(row["running"] for row in daemons.values())
    nodes = cli("nodes", "--json")
    assert nodes.returncode == 0, nodes.stderr
    listed = json.loads(nodes.stdout)  # stdout is one JSON document and nothing else
    assert [n["name"] for n in listed] == ["n1", "n2", "n3", "n4"]
    assert all(n["gres"] == "gpu:4" for n in listed)


def test_lab_env_exports_work(lab: Lab) -> None:
    out = cli("lab", "env").stdout
    assert f"export SLURM_CONF={lab.slurm_conf}" in out
    probe = subprocess.run(["bash", "-c", out + "\nenv -u SLURM_CONF bash -c 'eval \"$0\"; sinfo -h -N -p gpu -o %N'"],
                           capture_output=True, text=True, timeout=30)
    assert probe.stdout.split() == ["n1", "n2", "n3", "n4"], probe.stderr


def test_drain_shows_in_sinfo_R_then_resume(slurm: CliSlurm, resume_after: list[str]) -> None:
    reason = "slurmtools: test: integration drain [job 0]"
    resume_after.append("n3")
    slurm.drain(["n3"], reason)
    sinfo = subprocess.run(["sinfo", "-R", "-h", "-o", "%N|%E|%U"], capture_output=True, text=True).stdout
    assert f"n3|{reason}|root(0)" in sinfo.splitlines()
    n3 = slurm.nodes(["n3"])[0]
    assert n3.drained and n3.reason == reason and n3.reason_user == "root"
    slurm.resume(["n3"])
    n3 = slurm.nodes(["n3"])[0]
    assert not n3.drain and n3.reason == ""


def test_submit_failing_job_exit_code(slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    job_id = slurm.submit(["-o", "/dev/null", "-D", str(workdir), "--wrap", "exit 3"])
    jobs.append(job_id)
    job = wait_job(slurm, job_id, lambda j: j.finished, "finished")
    assert job.state == "FAILED" and job.exit == ExitStatus(3, 0)
    record = wait_until("sacct row", lambda: next(
        (r for r in slurm.job_history(job_ids=[job_id]) if r.state == "FAILED"), None))
    assert record.exit == ExitStatus(3, 0) and len(record.nodes) == 1


def test_submit_argv_reaches_script_intact(slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    script = workdir / "args.sh"
    script.write_text('#!/bin/bash\nfor a in "$@"; do printf "<%s>\\n" "$a"; done > "$OUT"\n')
    out = workdir / "args.out"
    args = ["a b", "it's", '"q"', "$(touch /tmp/slurmtools-pwned)", "x;y"]
    job_id = slurm.submit(["-o", "/dev/null", "-D", str(workdir), f"--export=ALL,OUT={out}", str(script), *args])
    jobs.append(job_id)
    wait_job(slurm, job_id, lambda j: j.finished, "finished")
    assert out.read_text().splitlines() == [f"<{a}>" for a in args]
    assert not Path("/tmp/slurmtools-pwned").exists()


def test_requeuehold_exclude_release_runs_elsewhere(slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    job_id = slurm.submit(["-o", "/dev/null", "-D", str(workdir), "--requeue", "--wrap", "sleep 300"])
    jobs.append(job_id)
    first = wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running")
    (bad,) = first.nodes
    slurm.requeue(job_id, hold=True)
    held = wait_job(slurm, job_id, lambda j: j.state == "PENDING", "pending (held)")
    assert held.restart_count == 1
    slurm.update_job(job_id, excluded_nodes=[bad], start_time="now")
    slurm.release(job_id)
    second = wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running again", timeout=90)
    assert bad not in second.nodes and second.excluded_nodes == (bad,) and second.restart_count == 1
    history = wait_until("sacct: the second attempt running", lambda: (  # sacct lags squeue a little
        h if len(h := slurm.job_history(job_ids=[job_id])) >= 2 and h[-1].state == "RUNNING" else None))
    assert [(r.attempt, r.state) for r in history] == [(0, "REQUEUED"), (1, "RUNNING")]
    assert history[0].nodes == (bad,) and history[1].nodes == second.nodes


def test_node_events_record_drains(slurm: CliSlurm, resume_after: list[str]) -> None:
    reason = "slurmtools: test: event history"
    resume_after.append("n4")
    slurm.drain(["n4"], reason)
    slurm.resume(["n4"])
    events = wait_until("sacctmgr event", lambda: [
        e for e in slurm.node_events() if e.node == "n4" and e.reason == reason and e.end is not None])
    assert events[-1].state.startswith("DRAIN") or events[-1].state == "DOWN"


def test_hooks_run_the_project_hooks(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    job_id = slurm.submit(["-o", "/dev/null", "-D", str(workdir), "-N2", "--gres=gpu:2", "--wrap", "true"])
    jobs.append(job_id)
    job = wait_job(slurm, job_id, lambda j: j.finished, "finished")
    assert job.state == "COMPLETED"

    def hook_lines() -> list[str] | None:
        lines = [ln for ln in (lab.root / "log" / "hooks.log").read_text().splitlines() if f" job={job_id} " in ln]
        return lines if len(lines) >= 5 else None  # 2 prologs, 2 epilogs, 1 EpilogSlurmctld

    lines = wait_until("hook log lines", hook_lines, timeout=30)
    assert all(ln.endswith("rc=0") for ln in lines), lines
    assert {ln.split()[1] for ln in lines} == {"prolog", "epilog", "epilog_slurmctld"}


def test_inject_xid79_kills_the_jobs_on_that_node(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                  workdir: Path, resume_after: list[str]) -> None:
    resume_after.append("n2")  # the epilog drains n2 for this XID 79
    job_id = slurm.submit(["-o", "/dev/null", "-D", str(workdir), "-w", "n2", "--no-requeue",
                           "--wrap", "sleep 300"])
    jobs.append(job_id)
    wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running")
    wait_until("job processes on n2", lambda: list(lab.job_pids_on("n2")))
    size_before = lab.kernel_log("n2").stat().st_size
    result = cli("lab", "inject", "n2", "xid79", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert str(job_id) in info["jobs"] and info["killed_pids"]
    new = lab.kernel_log("n2").read_text()[size_before:]
    assert "NVRM: Xid (PCI:0000:" in new and ": 79, pid=" in new and "GPU has fallen off the bus" in new
    job = wait_job(slurm, job_id, lambda j: j.finished, "killed")
    assert job.state == "FAILED" and job.exit.signal == 9


def test_inject_rejects_unknown_node_and_fault(lab: Lab) -> None:
    bad_node = cli("lab", "inject", "n9", "xid79")
    assert bad_node.returncode == 2 and "unknown lab node 'n9'" in bad_node.stderr
    bad_fault = cli("lab", "inject", "n1", "meltdown")
    assert bad_fault.returncode == 2 and "unknown fault 'meltdown'" in bad_fault.stderr
    assert "Traceback" not in bad_node.stderr + bad_fault.stderr
