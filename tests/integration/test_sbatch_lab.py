"""`slurmtools sbatch` on the lab: arguments reach the script intact, exclusions are merged, the
submission becomes the root of a retry chain."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slurmtools.lab import Lab
from slurmtools.ledger import models
from slurmtools.slurm import CliSlurm

from .conftest import wait_job, wait_until
from .test_epilog_lab import ledger_rows

HOSTILE = ["a b", "it's", '"q"', "$(touch {canary})", "x; touch {canary}", "line1\nline2", "--max-retries", "`id`"]


def st(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["slurmtools", *args], capture_output=True, text=True, check=False, cwd=cwd)


def test_arguments_reach_the_script_intact(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    canary = workdir / "pwned"
    args = [a.format(canary=canary) for a in HOSTILE]
    script = workdir / "show.sh"
    script.write_text("#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    script.chmod(0o755)
    out = st("sbatch", "--parsable", "-o", str(workdir / "out.json"), "-D", str(workdir), str(script), *args)
    assert out.returncode == 0, out.stderr
    job_id = int(out.stdout.strip().split(";")[0])               # printed exactly as sbatch --parsable does
    assert out.stdout.strip() == str(job_id)
    jobs.append(job_id)
    wait_job(slurm, job_id, lambda j: j.finished, "finished")
    assert json.loads((workdir / "out.json").read_text()) == args
    assert not canary.exists()
    job = slurm.job(job_id)
    assert job is not None and job.requeue and "slurmtools=retry:3:node" in job.comment


def test_soft_exclusion_is_merged_with_the_users_exclude(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                                         resume_after: list[str]) -> None:
    resume_after.append("n3")
    assert st("exclude", "add", "n3", "--soft", "--reason", "flaky NCCL").returncode == 0
    data = json.loads(Path(lab.root / "exclusions.json").read_text())
    assert [x["node"] for x in data["exclusions"]] == ["n3"]
    out = st("sbatch", "--hold", "--exclude=n1", "-o", "/dev/null", "--wrap", "true", cwd=workdir)
    assert out.returncode == 0, out.stderr
    job_id = int(out.stdout.split()[-1])                           # "Submitted batch job N", as sbatch says it
    jobs.append(job_id)
    job = slurm.job(job_id)
    assert job is not None and set(job.excluded_nodes) == {"n1", "n3"}
    assert st("exclude", "remove", "n3").returncode == 0
    assert json.loads(Path(lab.root / "exclusions.json").read_text())["exclusions"] == []
    out = st("sbatch", "--hold", "-o", "/dev/null", "--wrap", "true", cwd=workdir)
    jobs.append(int(out.stdout.split()[-1]))
    job = slurm.job(jobs[-1])
    assert job is not None and job.excluded_nodes == ()


def test_submission_becomes_the_chain_root(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    out = st("sbatch", "--parsable", "--hold", "--max-retries", "5", "--retry-on", "any", "-o", "/dev/null",
             "--wrap", "true", cwd=workdir)
    assert out.returncode == 0, out.stderr
    job_id = int(out.stdout)
    jobs.append(job_id)
    assert (lab.root / "submissions" / f"{job_id}.json").is_file()
    assert st("controller", "once", "--no-recovery").returncode in (0, 1)
    chains = wait_until("the chain", lambda: [c for c in ledger_rows(lab, models.RetryChain, root_job_id=job_id)
                                              if isinstance(c, models.RetryChain)])
    c = chains[0]
    assert (c.max_retries, c.retry_on, c.details["source"]) == (5, "any", "slurmtools sbatch")
    assert c.details["cwd"] == str(workdir) and "--wrap" in c.details["user_argv"]
    assert not (lab.root / "submissions" / f"{job_id}.json").exists()


TRAIN = """#!/bin/bash
echo "attempt ${SLURM_RESTART_COUNT:-0} on $SLURMD_NODENAME"
trap 'echo "checkpoint saved by attempt ${SLURM_RESTART_COUNT:-0}"' USR1
if [ "${SLURM_RESTART_COUNT:-0}" = 0 ] || [ -n "$ALWAYS_SLEEP" ]; then
  for _ in $(seq 300); do sleep 1; done
fi
echo "attempt ${SLURM_RESTART_COUNT:-0} done"
"""


def chain_of(lab: Lab, job_id: int) -> models.RetryChain | None:
    rows = [c for c in ledger_rows(lab, models.RetryChain, root_job_id=job_id) if isinstance(c, models.RetryChain)]
    return rows[0] if rows else None


def test_checkpoint_signal_before_an_admin_takes_the_busy_node(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                               workdir: Path, resume_after: list[str],
                                                               controller: subprocess.Popen[str]) -> None:
    script = workdir / "train.sh"
    script.write_text(TRAIN)
    script.chmod(0o755)
    out = st("sbatch", "--parsable", "--checkpoint-signal", "USR1", "--checkpoint-grace", "30", "-o",
             str(workdir / "train.out"), "-D", str(workdir), str(script), cwd=workdir)
    assert out.returncode == 0, out.stderr
    job_id = int(out.stdout)
    jobs.append(job_id)
    job = wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running")
    busy = job.nodes[0]
    resume_after.append(busy)
    chain = wait_until("the chain with its checkpoint signal", lambda: chain_of(lab, job_id))
    assert chain.details["checkpoint"] == {"signal": "USR1", "grace": 30}
    assert st("exclude", "add", busy, "--reason", "reseating cables").returncode == 0
    saved = wait_until("the USR1 trap", lambda: "checkpoint saved by attempt 0" in (workdir / "train.out").read_text())
    assert saved and slurm.job(job_id).restart_count == 0          # signalled, still running out its grace
    done = wait_job(slurm, job_id, lambda j: j.state == "COMPLETED", "completed elsewhere", timeout=150)
    assert done.restart_count == 1 and busy not in done.nodes and busy in done.excluded_nodes
    lines = (workdir / "train.out").read_text().splitlines()
    # Slurm's own lines: 22.05's `slurmstepd: error: *** JOB ...`, 26.05's `[stamp] error: *** JOB ... ***`
    ours = [x for x in lines if not x.startswith("slurmstepd") and "error: *** JOB " not in x]
    assert [x.split(" on ")[0] for x in ours] == [
        "attempt 0", "checkpoint saved by attempt 0", "attempt 1", "attempt 1 done"], lines
    (d,) = [x for x in ledger_rows(lab, models.ControllerDecision, job_id=job_id)
            if isinstance(x, models.ControllerDecision) and x.restart_count == 0]
    assert (d.classification, d.decision, d.status, d.excluded_nodes) == ("evacuation", "retry", "done", busy)
    assert d.t_requeued is not None
    assert d.t_requeued.timestamp() - d.details["evacuate"]["signalled"] >= 29   # the grace was given
    assert chain_of(lab, job_id).retries_used == 0                  # a planned move spends no retry
    why = st("why", str(job_id)).stdout
    assert f"{busy} taken out of service while the job ran" in why, why


def test_max_retries_two_with_a_fault_on_every_attempt(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                                       resume_after: list[str],
                                                       controller: subprocess.Popen[str]) -> None:
    script = workdir / "train.sh"
    script.write_text(TRAIN.replace("#!/bin/bash\n", "#!/bin/bash\nALWAYS_SLEEP=1\n"))
    script.chmod(0o755)
    out = st("sbatch", "--parsable", "--max-retries", "2", "-o", str(workdir / "train.out"), "-D", str(workdir),
             str(script), cwd=workdir)
    assert out.returncode == 0, out.stderr
    job_id = int(out.stdout)
    jobs.append(job_id)
    hit: list[str] = []
    for attempt in range(3):
        job = wait_job(slurm, job_id, lambda j, a=attempt: j.state == "RUNNING" and j.restart_count == a,
                       f"attempt {attempt} running", timeout=150)
        node = job.nodes[0]
        hit.append(node)
        resume_after.append(node)
        wait_until(f"job processes on {node}", lambda n=node: list(lab.job_pids_on(n)))
        out = subprocess.run(["slurmtools", "lab", "inject", node, "xid79"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    assert len(set(hit)) == 3, hit                                 # every retry went to a node not yet hit
    wait_until("the third decision", lambda: len([x for x in ledger_rows(lab, models.ControllerDecision,
                                                                         job_id=job_id)]) == 3, timeout=90)
    ds = sorted((x for x in ledger_rows(lab, models.ControllerDecision, job_id=job_id)
                 if isinstance(x, models.ControllerDecision)), key=lambda x: x.restart_count)
    assert [(x.classification, x.decision) for x in ds] == [("node_fault", "retry")] * 2 + [("node_fault", "no_retry")]
    assert ds[-1].reason == "retry budget spent (2 of 2 used)"
    chain = chain_of(lab, job_id)
    assert chain is not None and (chain.status, chain.retries_used) == ("failed", 2)
    assert slurm.job(job_id).restart_count == 2
    status = json.loads(st("status", str(job_id), "--json").stdout)
    assert status["chain"] == {"max_retries": 2, "retry_on": "node", "retries_used": 2, "status": "failed"}
    why = st("why", str(job_id)).stdout
    assert "Attempt 3 stopped at" in why and "It was not retried: retry budget spent (2 of 2 used)." in why, why


RESUMABLE = """#!/bin/bash
# The first run is hit by the fault; a later run (a new job id: SLURM_RESTART_COUNT starts again) finishes.
echo "job $SLURM_JOB_ID ($SLURM_JOB_NAME) on $SLURMD_NODENAME in $PWD args: $*"
if [ ! -e started-once ]; then touch started-once; for _ in $(seq 300); do sleep 1; done; fi
echo "job $SLURM_JOB_ID done"
"""


@pytest.fixture
def min_job_age(lab: Lab) -> Iterator[Callable[[int], None]]:
    """Set slurmctld's MinJobAge (seconds a finished job stays in its memory); 300 again afterwards."""
    def set_age(seconds: int) -> None:
        text = lab.slurm_conf.read_text()
        lab.slurm_conf.write_text(re.sub(r"(?m)^MinJobAge=\d+$", f"MinJobAge={seconds}", text))
        subprocess.run(["scontrol", "reconfigure"], check=True, capture_output=True)

    yield set_age
    set_age(300)


def test_a_job_that_left_slurmctld_is_resubmitted_from_its_record(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                                   workdir: Path, resume_after: list[str],
                                                                   min_job_age: Callable[[int], None]) -> None:
    script = workdir / "resumable.sh"
    script.write_text(RESUMABLE)
    script.chmod(0o755)
    # slurmctld forgets the failed job before the controller gets to it. Set before the job exists: a
    # `scontrol reconfigure` while the job is the newest one sets slurmctld 22.05's job id sequence back,
    # and its id is handed out again once it is purged (seen twice on the lab, 2026-11-22)
    min_job_age(2)
    out = st("sbatch", "--parsable", "--max-retries", "2", "-o", str(workdir / "out.%j"), "-D", str(workdir),
             str(script), "a b", "--lr=3e-4", cwd=workdir)
    assert out.returncode == 0, out.stderr
    old = int(out.stdout)
    jobs.append(old)
    job = wait_job(slurm, old, lambda j: j.state == "RUNNING", "running")
    node = job.nodes[0]
    resume_after.append(node)
    assert st("controller", "once", "--no-recovery").returncode in (0, 1)      # the record becomes the chain
    assert wait_until("the chain", lambda: chain_of(lab, old)) is not None
    wait_until(f"job processes on {node}", lambda: list(lab.job_pids_on(node)))
    assert subprocess.run(["slurmtools", "lab", "inject", node, "xid79"], capture_output=True).returncode == 0
    wait_until("slurmctld to forget the job", lambda: slurm.job(old) is None, timeout=120, every=0.5)

    def resubmitted() -> int | None:
        st("controller", "once", "--no-recovery")
        ds = [x for x in ledger_rows(lab, models.ControllerDecision, job_id=old)
              if isinstance(x, models.ControllerDecision) and x.status in ("done", "failed")]
        return ds[0].details.get("resubmit", {}).get("job_id") if ds else None

    new = wait_until("the resubmission", resubmitted, timeout=90, every=1.0)
    jobs.append(new)
    min_job_age(300)                   # (the new job is in slurmctld's memory: its id cannot be reused)
    (d,) = [x for x in ledger_rows(lab, models.ControllerDecision, job_id=old)
            if isinstance(x, models.ControllerDecision)]
    assert (d.classification, d.decision, d.status, d.excluded_nodes) == ("node_fault", "retry", "done", node)
    done = wait_job(slurm, new, lambda j: j.state == "COMPLETED", "the resubmitted job completed", timeout=120)
    assert node not in done.nodes and node in done.excluded_nodes and f"slurmtools=resubmit-of:{old}.0" in done.comment
    assert done.user == "root" and done.requeue and "slurmtools=retry:2:node" in done.comment
    text = (workdir / f"out.{new}").read_text()
    assert f"job {new} (resumable.sh) on {done.nodes[0]} in {workdir} args: a b --lr=3e-4" in text, text
    assert f"job {new} done" in text
    chain = chain_of(lab, old)
    assert chain is not None and (chain.retries_used, chain.status) == (1, "active")
    status = json.loads(st("status", str(new), "--json").stdout)
    assert status["jobs"] == [old, new] and status["chain"]["retries_used"] == 1
    why = st("why", str(old)).stdout
    assert f"resubmitted it as job {new}" in why and f"Attempt 1 (job {old}) stopped" in why, why
    # a researcher's read-only role (sql/readers.postgresql.sql) reads the chain, not its submissions
    reader = "slurmtools_test_reader"
    psql = ["psql", "-v", "ON_ERROR_STOP=1", "-Atq"]
    subprocess.run([*psql, "-c", f"DROP ROLE IF EXISTS {reader}; CREATE ROLE {reader} LOGIN"], check=True,
                   capture_output=True)
    sql = Path(__file__).parents[2] / "sql" / "readers.postgresql.sql"
    subprocess.run([*psql, "-v", f"readers={reader}", "-f", str(sql)], check=True, capture_output=True)
    url = lab.ledger_url.replace("//postgres@", f"//{reader}@")
    as_reader = subprocess.run(["slurmtools", "status", str(old), "--json"], capture_output=True, text=True,
                               env={**os.environ, "SLURMTOOLS_LEDGER_URL": url})
    assert as_reader.returncode == 0, as_reader.stderr
    assert json.loads(as_reader.stdout)["jobs"] == [old, new]
    denied = subprocess.run([*psql, "-U", reader, "-c", "SELECT details FROM retry_chains"], capture_output=True,
                            text=True)
    assert denied.returncode != 0 and "permission denied" in denied.stderr
    subprocess.run([*psql, "-c", f"DROP OWNED BY {reader}; DROP ROLE {reader}"], check=True, capture_output=True)
