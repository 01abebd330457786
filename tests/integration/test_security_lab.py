"""Hostile input on the lab: a job that names its process like a kernel fault and crashes. The kernel's own
segfault line for that crash (read from the real kernel log) reaches the node's log; the node is not drained.
And (issue 30) what a job writes (its checkpoint marks, its output, its comment) never erases its node's evidence;
exclusions a hostile exporter's labels opened before names were checked (F6) stop no submission."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

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


#: Issue 30: what a job writes (its checkpoint marks, its output, its comment) never erases its node's evidence.
HOSTILE = {
    "F1 marks time 1e300": ('printf \'{"event": "begin", "kind": "save", "path": "/x", "time": 1e300}\\n'
                            '{"event": "end", "kind": "save", "path": "/x", "time": NaN}\\n\' '
                            '> /tmp/slurmtools-ckpt.$SLURM_JOB_ID.$(id -u).jsonl', ""),
    "F2 NeMo start time": ('echo "[NeMo I 2025-04-11 14:48:45 nemo_logging:393] Global Checkpoint Save : Rank : 0 : '
                           'Iteration : 5 : Start time : 99999999999999999999s : Save duration : 1.0s"', ""),
    "F4 4 MiB line": ('/usr/bin/python3 -c "print(\'Epoch 1, global step 1: \' * 175000 + \' checkpoint saving model '
                      'to x\')"', ""),
    "F15 opt-out substring": ("true", "notslurmtools=offline"),
    "F15 opt-out token": ("true", "slurmtools=off"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_what_a_job_writes_never_erases_its_nodes_evidence(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                           workdir: Path, resume_after: list[str], case: str) -> None:
    """F1 F2 F4 F15 on the real slurmd epilog: the job writes one hostile thing, then an XID 79 hits its node. The
    XID 79 is recorded with trust kernel and the node is drained with our reason, whatever the job wrote."""
    import json

    shell, comment = HOSTILE[case]
    resume_after.append("n2")
    script = workdir / "hostile.sh"
    script.write_text(f"#!/bin/bash\n{shell}\nsleep 300\n")
    script.chmod(0o755)
    args = ["-o", str(workdir / "job.out"), "-D", str(workdir), "-w", "n2", "--no-requeue"]
    job_id = slurm.submit([*args, *(["--comment", comment] if comment else []), str(script)])
    jobs.append(job_id)
    wait_job(slurm, job_id, lambda j: j.state == "RUNNING" or j.finished, "started")
    wait_until("job processes", lambda: list(lab.job_pids_on("n2")))
    out = subprocess.run(["slurmtools", "lab", "inject", "n2", "xid79", "--json"], capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout), out.stderr
    wait_job(slurm, job_id, lambda j: j.finished, "finished")
    findings = wait_until("the XID 79 in the ledger", lambda: [
        f for f in ledger_rows(lab, models.Finding, job_id=job_id)
        if isinstance(f, models.Finding) and (f.xid == 79 or f.kind == "internal")])
    assert [(f.xid, f.trust) for f in findings if f.xid == 79] == [(79, "kernel")]
    assert not [f for f in findings if f.kind == "internal" and (f.details or {}).get("stage") == "diagnosis"]
    n2 = slurm.nodes(["n2"])[0]
    assert n2.drain and n2.reason.startswith("slurmtools: hardware: XID 79"), n2.reason


def st(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["slurmtools", *args], capture_output=True, text=True, timeout=120, check=False)


HOSTILE_NODES = ["n[1-500]", "10.0.0.5", "<svg onload=alert(1)>", "n1\nn2"]


def test_names_slurm_does_not_know_stop_no_submission(slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    """F6: soft exclusions for names Slurm does not list (as a ledger written before the fix holds them, from a
    hostile exporter's labels) are never published: a plain sbatch (through the job_submit plugin) and
    `slurmtools sbatch` both submit, avoiding the one real excluded node; an admin then ends every one of them
    with `exclude remove`, by the name `exclude list` shows."""
    from slurmtools import config, drain
    from slurmtools.ledger import api

    cfg = config.get()
    api.record([drain.exclusion_event(cfg, n, "soft", "slurmtools: hardware: anomaly (issue 30 F6)", "detect",
                                       ttl_s=900) for n in HOSTILE_NODES], cfg)
    api.flush(cfg)
    try:
        add = st("exclude", "add", "n3", "--soft", "--reason", "issue 30 F6", "--ttl", "15m")   # publishes
        assert add.returncode == 0, add.stderr
        published = json.loads(Path(cfg.exclusions.data_file).read_text())
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
