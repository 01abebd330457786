"""slurmtools' job_submit.lua and cli_filter.lua inside the lab's real slurmctld and clients (enabled by
`lab up`): exclusions reach plain sbatch jobs, updates need no restart, a bad data file fails open."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmtools.lab import Lab, read_pid
from slurmtools.slurm import CliSlurm

from .conftest import wait_job, wait_until


def st(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["slurmtools", *args], capture_output=True, text=True, check=False)


def plain_sbatch(jobs: list[int], *args: str) -> int:
    out = subprocess.run(["sbatch", "--parsable", "--hold", "-o", "/dev/null", *args, "--wrap", "true"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    jobs.append(int(out.stdout.strip().split(";")[0]))
    return jobs[-1]


@pytest.fixture
def soft_n3(lab: Lab) -> Iterator[None]:
    out = st("exclude", "add", "n3", "--soft", "--reason", "flaky NCCL all-reduce")
    assert out.returncode == 0, out.stderr
    yield
    st("exclude", "remove", "n3", "--reason", "test cleanup")


def ctld_log_since(lab: Lab, offset: int) -> str:
    with (lab.root / "log" / "slurmctld.log").open(encoding="utf-8", errors="replace") as fh:
        fh.seek(offset)
        return fh.read()


def test_plain_sbatch_gets_soft_exclusions_merged(lab: Lab, slurm: CliSlurm, jobs: list[int], soft_n3: None) -> None:
    assert slurm.job(plain_sbatch(jobs)).excluded_nodes == ("n3",)
    assert slurm.job(plain_sbatch(jobs, "--exclude=n1")).excluded_nodes == ("n1", "n3")
    named = slurm.job(plain_sbatch(jobs, "-w", "n3"))       # asked for by name: not excluded, not rejected
    assert named.excluded_nodes == () and named.state == "PENDING"
    assert slurm.job(plain_sbatch(jobs, "--comment", "debug slurmtools=off")).excluded_nodes == ()


def test_removing_the_exclusion_needs_no_restart(lab: Lab, slurm: CliSlurm, jobs: list[int], soft_n3: None) -> None:
    pid = read_pid(lab.root / "run" / "slurmctld.pid")
    calls = (lab.root / "log" / "slurm-calls.log").stat().st_size
    assert slurm.job(plain_sbatch(jobs)).excluded_nodes == ("n3",)
    assert st("exclude", "remove", "n3", "--reason", "fixed").returncode == 0
    assert slurm.job(plain_sbatch(jobs)).excluded_nodes == ()
    assert read_pid(lab.root / "run" / "slurmctld.pid") == pid
    with (lab.root / "log" / "slurm-calls.log").open() as fh:
        fh.seek(calls)
        assert "reconfigure" not in fh.read()


@pytest.mark.parametrize("damage,line", [
    ("missing", "cannot read"),
    ("garbage", "has no slurmtools header"),
    ("stale", "is stale"),
])
def test_a_bad_data_file_fails_open_and_says_so(lab: Lab, slurm: CliSlurm, jobs: list[int], soft_n3: None,
                                                damage: str, line: str) -> None:
    data = lab.root / "exclusions.txt"
    good = data.read_text()
    offset = (lab.root / "log" / "slurmctld.log").stat().st_size
    try:
        if damage == "missing":
            data.unlink()
        elif damage == "garbage":
            data.write_text("{not: [our, format\n")
        else:   # written two days ago by a controller that has died since
            data.write_text(good.replace(good.splitlines()[1], f"generated\t{int(time.time()) - 2 * 86400}"))
        job = slurm.job(plain_sbatch(jobs, "--exclude=n1"))
        assert job.excluded_nodes == ("n1",) and job.state == "PENDING"     # accepted, unchanged
        logged = wait_until("the plugin's line in slurmctld.log", lambda: [
            x for x in ctld_log_since(lab, offset).splitlines() if "slurmtools: job_submit:" in x and line in x])
        assert logged[0].endswith("jobs are accepted without exclusions"), logged
    finally:
        data.write_text(good)
    assert slurm.job(plain_sbatch(jobs)).excluded_nodes == ("n3",)         # and back once it is readable
    assert "slurmtools: job_submit: reading exclusions from" in ctld_log_since(lab, offset)


def test_srun_and_test_only_warn_about_an_excluded_node(lab: Lab, soft_n3: None) -> None:
    srun = subprocess.run(["srun", "-w", "n3", "-t", "1", "--test-only", "true"], capture_output=True, text=True)
    sbatch = subprocess.run(["sbatch", "-w", "n3", "--test-only", "--wrap", "true"], capture_output=True, text=True)
    for name, out in (("srun", srun), ("sbatch", sbatch)):
        assert out.returncode == 0, out.stderr            # a warning, never a refusal
        assert (f"{name}: slurmtools: warning: n3 is excluded by slurmtools (soft: other jobs avoid it); it may "
                "have a fault: flaky NCCL all-reduce") in out.stderr
    quiet = subprocess.run(["srun", "-w", "n2", "-t", "1", "--test-only", "true"], capture_output=True, text=True)
    assert quiet.returncode == 0 and "slurmtools" not in quiet.stderr


def test_partition_defaults_reach_plain_jobs(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    """Partition train: requeue, the retry marker and --open-mode=append; gpu: none of them."""
    train = slurm.job(plain_sbatch(jobs, "-p", "train", "--comment", "exp-9"))
    assert train.requeue and train.comment == "exp-9 slurmtools=retry:2:node"
    gpu = slurm.job(plain_sbatch(jobs, "-p", "gpu"))
    assert not gpu.requeue and gpu.comment == ""
    mine = slurm.job(plain_sbatch(jobs, "-p", "train", "--no-requeue", "--comment", "slurmtools=retry:5:any"))
    assert not mine.requeue and mine.comment == "slurmtools=retry:5:any"
    off = slurm.job(plain_sbatch(jobs, "-p", "train", "--comment", "slurmtools=off"))
    assert not off.requeue and off.comment == "slurmtools=off"
    # --open-mode=append from cli_filter: a requeued job's output keeps both attempts (gpu truncates it)
    outputs = {}
    for partition in ("train", "gpu"):
        out = workdir / f"{partition}.out"
        job_id = int(subprocess.run(
            ["sbatch", "--parsable", "-p", partition, "--requeue", "-o", str(out), "-D", str(workdir), "--wrap",
             'echo "attempt ${SLURM_RESTART_COUNT:-0}"; sleep 300'], capture_output=True, text=True,
            check=True).stdout.strip())
        jobs.append(job_id)
        wait_until(f"{partition} job output", lambda out=out: out.exists() and "attempt 0" in out.read_text())
        subprocess.run(["scontrol", "requeue", str(job_id)], check=True)
        wait_job(slurm, job_id, lambda j: j.restart_count == 1 and j.state == "RUNNING", "running again",
                 timeout=180)
        wait_until(f"{partition} attempt 1", lambda out=out: "attempt 1" in out.read_text())
        subprocess.run(["scancel", str(job_id)], check=False)
        outputs[partition] = [x for x in out.read_text().splitlines() if x.startswith("attempt")]
    assert outputs == {"train": ["attempt 0", "attempt 1"], "gpu": ["attempt 1"]}
