"""Hostile input on the lab: a job that names its process like a kernel fault and crashes. The kernel's own
segfault line for that crash (read from the real kernel log) reaches the node's log; the node is not drained."""

from __future__ import annotations

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
