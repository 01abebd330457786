"""The controller's deep check of a fail-slow node on the lab (controller/failslow.py): a soft exclusion as
`perf scan --record` opens it (source perf, `deep_check: true`); while a job is on the node the pass leaves it
alone (real sinfo state); once the node is idle the pass runs the lab's real deep check on it, records it, and,
the lab's snapshots having no CUDA section (nothing measured the flagged GPU), keeps the exclusion as
`inconclusive`, never a drain."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from slurmtools.lab import Lab
from slurmtools.ledger import models
from slurmtools.slurm import CliSlurm

from .conftest import end_exclusions, wait_job, wait_until
from .test_epilog_lab import ledger_rows


def once() -> list[dict[str, object]]:
    out = subprocess.run(["slurmtools", "controller", "once", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode in (0, 3), out.stderr
    return [r for r in json.loads(out.stdout)["failslow"] if r["node"] == "n3"]


def test_a_fail_slow_node_is_deep_checked_only_when_idle(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                         workdir: Path) -> None:
    from slurmtools import config, drain
    from slurmtools.ledger import api

    cfg = config.get()
    api.record([drain.exclusion_event(cfg, "n3", "soft", "slurmtools: hardware: fail-slow GPU 3: lab test",
                                       "perf", ttl_s=900, evidence={"perf": {"gpu": 3, "uuid": "GPU-lab-n3-3",
                                                                             "streak": 1}, "deep_check": True})],
               cfg)
    api.flush(cfg)
    try:
        job = slurm.submit(["-w", "n3", "-o", "/dev/null", "-D", str(workdir), "--wrap", "sleep 120"])
        jobs.append(job)
        wait_job(slurm, job, lambda j: j.state == "RUNNING", "running on n3")
        (row,) = once()
        assert str(row.get("skipped", "")).startswith("Slurm state "), row
        subprocess.run(["scancel", str(job)], capture_output=True, check=False)
        wait_until("n3 idle", lambda: (lambda n: n.state == "idle" and not n.flags)(slurm.nodes(["n3"])[0]),
                   timeout=120, every=1)
        (row,) = once()
        assert (row["verdict"], row["outcome"]) == ("ok", "inconclusive"), row
        assert not slurm.nodes(["n3"])[0].drain
        subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True, check=False)
        checks = [c.details for c in ledger_rows(lab, models.NodeStateChange, action="deep_check")
                  if isinstance(c, models.NodeStateChange) and c.node == "n3" and c.details.get("failslow")]
        assert checks and checks[-1]["outcome"] == "inconclusive" and checks[-1]["uuid"] == "GPU-lab-n3-3"
    finally:
        end_exclusions(["n3"])
