"""Hostile input on the lab: a job that names its process like a kernel fault and crashes. The kernel's own
segfault line for that crash (read from the real kernel log) reaches the node's log; the node is not drained.
Exclusions a hostile exporter's labels opened before names were checked (issue 30 F6) stop no submission."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from slurmtools.lab import Lab
from slurmtools.ledger import models
from slurmtools.slurm import CliSlurm

from .conftest import wait_job, wait_until
from .test_epilog_lab import ledger_rows

NAME = "EDAC x: 1 UE "   # what an MCE line looks like, 13 bytes: fits the kernel's 15-byte task name
CRASH = f"import ctypes; ctypes.CDLL(None).prctl(15, b'{NAME}', 0, 0, 0); ctypes.string_at(0)"


def kernel_lines() -> list[str]:
    return subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout.splitlines()


def test_a_process_named_like_a_kernel_fault_crashes_and_the_node_stays(
        lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str]) -> None:
    resume_after.append("n4")
    before = set(kernel_lines())
    script = workdir / "crash.sh"
    script.write_text(f'#!/bin/sh\n/usr/bin/python3 -c "{CRASH}"\nsleep 3\n')
    script.chmod(0o755)
    job_id = slurm.submit(["-o", str(workdir / "job.out"), "-D", str(workdir), "-w", "n4", "--no-requeue",
                           str(script)])
    jobs.append(job_id)
    line = wait_until("the kernel's segfault line for the crash", lambda: next(
        (ln for ln in kernel_lines() if ln not in before and f"{NAME}[" in ln and "segfault at" in ln), None))
    message = line.split("] ", 1)[1]          # dmesg's "[ seconds] message": the kernel's own text
    assert message.startswith(NAME)
    lab.append_kernel_line("n4", message)     # the lab node's kernel log is a file: the real line goes there
    wait_job(slurm, job_id, lambda j: j.finished, "finished")
    wait_until("the attempt in the ledger", lambda: ledger_rows(lab, models.JobAttempt, job_id=job_id))
    findings = [f for f in ledger_rows(lab, models.Finding, job_id=job_id) if isinstance(f, models.Finding)]
    assert not [f for f in findings if f.trust == "kernel"], [(f.kind, f.message) for f in findings]
    n4 = slurm.nodes(["n4"])[0]
    assert not n4.drain, n4.reason


def st(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["slurmtools", *args], capture_output=True, text=True, timeout=120, check=False)


HOSTILE_NODES = ["n[1-500]", "10.0.0.5", "<svg onload=alert(1)>", "n1\nn2"]


def test_names_slurm_does_not_know_stop_no_submission(slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    """F6: soft exclusions for names Slurm does not list (as a ledger written before the fix holds them, from a
    hostile exporter's labels) are never published: a plain sbatch (through the job_submit plugin) and
    `slurmtools sbatch` both submit, avoiding the one real excluded node; an admin then ends every one of them
    with `exclude remove`, by the name `exclude list` shows."""
    from slurmtools import config
    from slurmtools.controller import safety
    from slurmtools.ledger import api

    cfg = config.get()
    api.record([safety.exclusion_event(cfg, n, "soft", "slurmtools: hardware: anomaly (issue 30 F6)", "detect",
                                       ttl_s=900) for n in HOSTILE_NODES], cfg)
    api.flush(cfg)
    try:
        add = st("exclude", "add", "n3", "--soft", "--reason", "issue 30 F6", "--ttl", "15m")   # publishes
        assert add.returncode == 0, add.stderr
        published = json.loads(Path(cfg.get("exclusions.data_file")).read_text())
        assert sorted(x["node"] for x in published["exclusions"] if x["reason"].endswith("F6)")) == []
        assert "n3" in {x["node"] for x in published["exclusions"]}
        plain = subprocess.run(["sbatch", "--parsable", "--hold", "-o", "/dev/null", "--wrap", "true"],
                               capture_output=True, text=True)
        assert plain.returncode == 0, plain.stderr
        jobs.append(int(plain.stdout.strip().split(";")[0]))
        assert "n3" in slurm.job(jobs[-1]).excluded_nodes
        wrapped = subprocess.run(["slurmtools", "sbatch", "--parsable", "--hold", "-o", "/dev/null", "--wrap",
                                  "true"], capture_output=True, text=True, cwd=workdir)
        assert wrapped.returncode == 0 and "Traceback" not in wrapped.stderr, wrapped.stderr
        jobs.append(int(wrapped.stdout.strip().split(";")[0]))
        assert "n3" in slurm.job(jobs[-1]).excluded_nodes
    finally:
        listed = json.loads(st("exclude", "list", "--json").stdout)
        for x in listed:
            if x["reason"].endswith("F6)"):         # stored as `exclude list` shows it: n1\x0an2
                out = st("exclude", "remove", x["node"])
                assert out.returncode == 0, out.stderr
        st("exclude", "remove", "n3")
    left = json.loads(st("exclude", "list", "--json").stdout)
    assert not [x for x in left if x["reason"].endswith("F6)")]
