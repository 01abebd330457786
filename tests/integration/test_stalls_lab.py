"""The stall detector on the lab (docs/stalls.md): a two-node job prints its steps, then one rank stops (sleeps)
while the other waits on it; the lab's GPU signal says spinning on the waiting node and idle on the stopped one.
`stalls scan --quiet 90s` finds it within the configured time and names the stopped node, with every node's
evidence; `stalls run` (act mode) records it and the controller requeues the job away from that node, where it
completes. Confounders that must not be flagged: a long checkpoint write with progress paused, a job that prints
nothing while its GPUs work, a job at its start (loading data)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from slurmtools.lab import Lab
from slurmtools.ledger import models
from slurmtools.slurm import CliSlurm

from .conftest import wait_idle, wait_job, wait_until
from .test_controller_lab import decisions, inject, submit
from .test_epilog_lab import ledger_rows

QUIET = "90s"
#: A line's date and time, as training loggers print them (double quotes: it goes inside `bash -c '...'`).
STAMP = '$(date "+%F %T")'


@pytest.fixture
def stalls_env(lab: Lab) -> Iterator[dict[str, str]]:
    """The lab's configuration with the stall detector in act mode and a quick sampler; a sampler per node
    (what `slurmtools-stalls-sampler.service` runs on a real node); every node's GPU signal cleared after."""
    base = (lab.etc / "slurmtools.toml").read_text()
    assert "[stalls]\n" in base, "the lab's configuration has no [stalls] section: `slurmtools lab up` again"
    conf = lab.etc / "stalls-test.toml"
    conf.write_text(base.replace("[stalls]\n", '[stalls]\nact = true\nsampler_interval = "2s"\ninterval = "5s"\n',
                                 1))
    conf.chmod(0o644)
    env = {**os.environ, "SLURMTOOLS_CONFIG": str(conf)}
    nodes = [n.name for n in lab.nodes]
    log = (lab.root / "log" / "stalls-sampler.log").open("a")
    samplers = [subprocess.Popen(["slurmtools", "stalls", "sample", "--node", n], env=env, stdout=log,
                                 stderr=subprocess.STDOUT) for n in nodes]
    yield env
    for p in samplers:
        p.send_signal(signal.SIGTERM)
    for p in samplers:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    log.close()
    for n in nodes:
        inject(n, "gpu-clear")


def scan(env: dict[str, str]) -> dict[int, dict[str, Any]]:
    out = subprocess.run(["slurmtools", "stalls", "scan", "--quiet", QUIET, "--json"], capture_output=True,
                         text=True, env=env, timeout=180)
    assert out.returncode in (0, 1), out.stderr
    return {int(r["job_id"]): r for r in json.loads(out.stdout)}


def last_line_time(path: Path) -> float:
    return path.stat().st_mtime


def test_a_hung_rank_is_found_named_and_the_job_requeued_away_from_it(
        lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str],
        controller: subprocess.Popen[str], stalls_env: dict[str, str]) -> None:
    wait_idle(slurm)
    script = workdir / "train.sh"
    script.write_text(f"""#!/bin/bash
if [ "${{SLURM_RESTART_COUNT:-0}}" != 0 ]; then
    srun --ntasks-per-node=1 bash -c 'for i in 1 2 3; do echo "{STAMP} rank $SLURM_PROCID step $i (again)"; done'
    exit 0
fi
srun --ntasks-per-node=1 bash -c '
for i in $(seq 1 10); do echo "{STAMP} rank $SLURM_PROCID step $i"; sleep 2; done
if [ "$SLURM_PROCID" = 1 ]; then sleep 100000; fi             # this rank stops
while [ ! -e {workdir}/never ]; do sleep 1; done              # the other waits on it, in vain
'
""")
    job_id = submit(slurm, jobs, workdir, "-N2", "--requeue", "--comment", "exp-stall slurmtools=retry:2",
                    str(script))
    job = wait_job(slurm, job_id, lambda j: j.state == "RUNNING" and len(j.nodes) == 2, "running on 2 nodes")
    waiting, stopped = job.nodes[0], job.nodes[1]
    resume_after.extend(job.nodes)
    inject(waiting, "gpu-spin")
    inject(stopped, "gpu-idle")
    out = workdir / "job.out"
    wait_until("the steps printed", lambda: out.exists() and "rank 1 step 10" in out.read_text(), timeout=90)
    stopped_at = last_line_time(out)

    # 1. scan: found within --quiet (90 s: learned gaps of 2 s are far below it) plus a pass, the stopped node named
    found = wait_until("the stall", lambda: (lambda r: r if r.get(job_id, {}).get("stalled") else None)(
        scan(stalls_env)), timeout=300, every=5)
    r = found[job_id]
    detected_after = time.time() - stopped_at
    assert 90 <= r["quiet_s"] and detected_after < 90 + 60, detected_after
    assert r["suspect"] == stopped and r["gpu"] == "hung"
    ev = r["evidence"]
    assert ev["gpu"]["nodes"][waiting]["class"] == "spin" and ev["gpu"]["nodes"][stopped]["class"] == "idle"
    assert ev["blame"] == {stopped: ["gpu"]}
    for node in job.nodes:           # every node's processes, with their states and wait channels
        probe = ev["nodes"][node]
        assert "error" not in probe, probe
        assert probe["processes"] and any(p["state"] == "S" for p in probe["processes"])
        assert all({"pid", "ppid", "state", "wchan", "d_threads"} <= set(p) for p in probe["processes"])
        # the rank's shell (srun may start it by its full path: /usr/bin/bash -c ...)
        shells = [p["cmdline"] for p in probe["processes"] if p["cmdline"].split(" ", 1)[0].endswith("bash")]
        assert any(" -c " in f"{c} " for c in shells), [p["cmdline"] for p in probe["processes"]]
    assert any(p["cmdline"].split(" ", 1)[0].endswith("sleep") and p["cmdline"].endswith(" 100000")
               for p in ev["nodes"][stopped]["processes"])   # the stopped rank
    assert not any(j.get("stalled") for jid, j in found.items() if jid != job_id)

    # 2. stalls run (act mode): the finding with its evidence, a stall decision; the controller requeues
    run = subprocess.run(["slurmtools", "stalls", "run", "--once", "--quiet", QUIET], capture_output=True,
                         text=True, env=stalls_env, timeout=180)
    assert run.returncode == 0 and f"job {job_id} requeued" in run.stderr, run.stderr
    for node in job.nodes:
        inject(node, "gpu-clear")
    done = wait_job(slurm, job_id, lambda j: j.state == "COMPLETED", "completed away from the stopped node",
                    timeout=180)
    assert done.restart_count == 1 and stopped not in done.nodes and stopped in done.excluded_nodes
    text = out.read_text()
    assert "rank 1 step 10" in text and "(again)" in text
    (d0,) = [d for d in decisions(lab, job_id) if d.restart_count == 0]
    assert (d0.classification, d0.decision, d0.status, d0.excluded_nodes) == ("stall", "retry", "done", stopped)
    assert None not in (d0.t_detected, d0.t_requeued, d0.t_released, d0.t_verified)
    (chain,) = [c for c in ledger_rows(lab, models.RetryChain, root_job_id=job_id)
                if isinstance(c, models.RetryChain)]
    assert chain.retries_used == 1                          # counted against the budget
    findings = [f for f in ledger_rows(lab, models.Finding, job_id=job_id, kind="stall")
                if isinstance(f, models.Finding)]
    assert len(findings) == 1 and findings[0].node == stopped and findings[0].trust == "metrics"
    kept = findings[0].details["evidence"]
    assert set(kept["nodes"]) == set(job.nodes) and kept["blame"] == {stopped: ["gpu"]}
    calls = (lab.root / "log" / "slurm-calls.log").read_text().splitlines()
    assert sum(f"requeuehold {job_id}" in c for c in calls) == 1
    assert not [n for n in slurm.nodes([stopped]) if n.drain]       # a suspect is not drained on a stall alone
    why = subprocess.run(["slurmtools", "why", str(job_id)], capture_output=True, text=True, check=True).stdout
    assert "stalled: no progress for" in why and f"suspect {stopped}" in why and f"away from {stopped}." in why, why

    # 3. the suspect's deep check, once no job runs on it: the lab's nodes are healthy, so it passes (no drain)
    def checked() -> list[models.NodeStateChange] | None:
        subprocess.run(["slurmtools", "stalls", "run", "--once", "--quiet", QUIET], capture_output=True, text=True,
                       env=stalls_env, timeout=300)
        rows = [c for c in ledger_rows(lab, models.NodeStateChange, node=stopped, action="deep_check")
                if isinstance(c, models.NodeStateChange) and c.actor == "stalls"
                and c.details.get("job_id") == job_id]
        return rows or None

    (check,) = wait_until("the suspect's deep check", checked, timeout=300, every=5)
    assert check.details["verdict"] == "ok" and not [n for n in slurm.nodes([stopped]) if n.drain]


def test_quiet_phases_that_are_not_stalls(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                          stalls_env: dict[str, str]) -> None:
    """Three jobs, one node each, quiet for longer than --quiet: a checkpoint write (its begin line printed,
    GPUs idle), a job printing nothing while its GPUs work, and a job at its start (no output yet, GPUs idle)."""
    wait_idle(slurm)
    ckpt = submit(slurm, jobs, workdir, "-w", "n1", "-o", str(workdir / "ckpt.out"), "--wrap",
                  f'for i in $(seq 1 5); do echo "{STAMP} step $i"; sleep 2; done; '
                  f'echo "[$(date "+%F %T"),000] [INFO] [engine.py:3] [Torch] Checkpoint global_step5 is about to '
                  f'be saved!"; sleep 600')
    working = submit(slurm, jobs, workdir, "-w", "n2", "-o", str(workdir / "working.out"), "--wrap",
                     f'echo "{STAMP} epoch 1 starts"; sleep 600')
    starting = submit(slurm, jobs, workdir, "-w", "n3", "-o", str(workdir / "starting.out"), "--wrap",
                      "sleep 600")
    for job_id in (ckpt, working, starting):
        wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running")
    inject("n1", "gpu-idle")     # writing a checkpoint: the GPUs wait
    inject("n2", "gpu-busy")     # real work, nothing printed
    inject("n3", "gpu-idle")     # loading data
    time.sleep(150)              # past --quiet 90s (and x2 for idle GPUs) after every job's last line
    res = scan(stalls_env)
    assert {ckpt, working, starting} <= set(res)
    for job_id, phase in ((ckpt, "checkpoint"), (working, "GPUs work"), (starting, "startup")):
        r = res[job_id]
        assert not r["stalled"], r
        assert r["quiet_s"] > 120, r
        assert phase in r["evidence"]["why"], r["evidence"]["why"]
    assert res[working]["gpu"] == "working" and res[ckpt]["evidence"]["progress"]["in_checkpoint_since"]
