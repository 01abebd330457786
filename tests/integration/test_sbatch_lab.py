"""`slurmtools sbatch` on the lab: arguments reach the script intact, exclusions are merged, the
submission becomes the root of a retry chain."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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
