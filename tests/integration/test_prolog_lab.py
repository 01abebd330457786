"""The prolog gate on the lab: a node whose checks fail is drained with our reason and the job that
landed there is requeued by Slurm and runs elsewhere; healthy nodes' prologs make no Slurm call."""

from __future__ import annotations

from pathlib import Path

from slurmtools.lab import Lab, source
from slurmtools.ledger import models
from slurmtools.slurm import CliSlurm

from .conftest import wait_job, wait_until
from .test_epilog_lab import ledger_rows


def calls_since(lab: Lab, offset: int) -> list[str]:
    with open(lab.root / "log" / "slurm-calls.log", encoding="utf-8") as fh:
        fh.seek(offset)
        return fh.read().splitlines()


def test_row_remap_failure_on_n3_requeues_the_job_elsewhere(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                            workdir: Path, resume_after: list[str]) -> None:
    resume_after.append("n3")
    log = lab.root / "log" / "slurm-calls.log"
    offset = log.stat().st_size if log.exists() else 0
    lab.inject("n3", "row-remap-failure")
    try:
        # One whole node each: one of the four lands on n3 (whose GPU 3 is among the job's GPUs). Slurm moves
        # a job whose prolog failed only if it may be requeued: the lab has JobRequeue=0, and partition train's
        # job_submit defaults make plain jobs requeueable.
        for _ in range(4):
            jobs.append(slurm.submit(["-p", "train", "-N1", "--exclusive", "--gres=gpu:4", "-o",
                                      str(workdir / "%j.out"), "-D", str(workdir), "--wrap", "sleep 2; hostname"]))
        done = [wait_job(slurm, j, lambda i: i.finished, "finished", timeout=120) for j in jobs]
    finally:
        lab.inject("n3", "healthy")
    assert all(j.state == "COMPLETED" for j in done), [(j.job_id, j.state) for j in done]
    moved = [j for j in done if j.restart_count == 1]
    assert len(moved) == 1, [(j.job_id, j.nodes, j.restart_count) for j in done]
    assert moved[0].nodes and "n3" not in moved[0].nodes
    n3 = slurm.nodes(["n3"])[0]
    assert n3.drain
    assert n3.reason == (f"slurmtools: hardware: gpu: GPU 3 (0000:5d:00.0): row remapping failed (12 uncorrectable "
                         f"rows) [job {moved[0].job_id}]")
    # The failing prolog read node states, drained once, read them again (safety.settle: the breaker's
    # re-check); every healthy prolog made no Slurm call.
    # (`sinfo --version`, which asks no daemon, picks how nodes are read: `sinfo --json` on 22.05, `scontrol show
    # node --json` on 23.02+)
    prolog_calls = [c.split(maxsplit=3)[1:] for c in calls_since(lab, offset) if " prolog_slurmd " in c]
    kinds = {"sinfo --json": "read", "scontrol show node --json": "read", "scontrol update": "drain"}
    said = [(node, next((k for t, k in kinds.items() if tool.startswith(t)), tool)) for node, _, tool in prolog_calls
            if tool != "sinfo --version"]
    assert [n for n, _ in said if n != "n3"] == []
    # With pyslurm (25.11 from source) the hooks' calls bypass the logging shims: only the CLI's are counted.
    if source.hook_backend(lab.slurm) == "cli":
        assert said == [("n3", "read"), ("n3", "drain"), ("n3", "read")]
    rows = wait_until("the failed gate run in the ledger", lambda: [
        r for r in ledger_rows(lab, models.GateRun, node="n3", job_id=moved[0].job_id)
        if isinstance(r, models.GateRun) and r.verdict == "fail"])
    assert rows[0].failed_checks == "gpu" and rows[0].profile == "prolog"


def test_opt_out_comment_skips_the_gate(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                        resume_after: list[str]) -> None:
    resume_after.append("n4")
    lab.inject("n4", "ib-port-down")
    try:
        job = slurm.submit(["-w", "n4", "--comment", "slurmtools=off", "-o", str(workdir / "%j.out"),
                            "--wrap", "true"])
        jobs.append(job)
        info = wait_job(slurm, job, lambda i: i.finished, "finished", timeout=60)
    finally:
        lab.inject("n4", "healthy")
    assert info.state == "COMPLETED" and info.restart_count == 0
    assert not slurm.nodes(["n4"])[0].drain


def test_hooks_write_node_exporters_textfile(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path) -> None:
    """On the lab's real slurmd: a job on n2 leaves n2's last gate and epilog in its textfile directory (the lab's
    `[metrics] textfile_dir = $LAB/nodes/{node}/textfile`), valid for Debian's promtool."""
    import subprocess
    import time

    since = time.time()
    jobs.append(slurm.submit(["-w", "n2", "-N1", "--gres=gpu:1", "-o", str(workdir / "%j.out"), "-D", str(workdir),
                              "--wrap", "true"]))
    assert wait_job(slurm, jobs[-1], lambda i: i.finished, "finished", timeout=120).state == "COMPLETED"
    tf = lab.node_dir("n2") / "textfile"
    gate = wait_until("the gate's textfile", lambda: (tf / "slurmtools_gate.prom").exists() and
                      (tf / "slurmtools_gate.prom").stat().st_mtime >= since - 1)
    epi = wait_until("the epilog's textfile", lambda: (tf / "slurmtools_epilog.prom").exists() and
                     (tf / "slurmtools_epilog.prom").stat().st_mtime >= since - 1)
    assert gate and epi
    text = (tf / "slurmtools_gate.prom").read_text()
    assert 'slurmtools_hook_gate_verdict{verdict="ok",profile="prolog"} 1' in text
    for name in ("slurmtools_gate.prom", "slurmtools_epilog.prom"):
        check = subprocess.run(["promtool", "check", "metrics"], input=(tf / name).read_text(), capture_output=True,
                               text=True)
        assert check.returncode == 0, name + check.stdout + check.stderr
    assert not list(lab.node_dir("n1").glob("textfile/*.tmp")) and not list(tf.glob("*.tmp"))
