"""Return to service on the lab, driven by what the node's hardware shows: a GPU that fell off the bus (XID 79) is
gone from the node's probes until the node reboots; the controller's deep checks keep it out of service until then,
return it after the reboot, and the drain is recorded as confirmed, never as a false drain."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from slurmtools.lab import Lab
from slurmtools.ledger import models
from slurmtools.slurm import CliSlurm

from .conftest import wait_until
from .test_epilog_lab import ledger_rows, run_and_inject


def recover_once() -> list[dict[str, object]]:
    out = subprocess.run(["slurmtools", "controller", "once", "--json"], capture_output=True, text=True)
    assert out.returncode in (0, 3), out.stderr
    return list(json.loads(out.stdout)["recovery"])


def last_id(lab: Lab) -> int:
    """The newest ledger row id of node state changes: what a test's window starts after."""
    subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True, check=False)
    return max((c.id for c in ledger_rows(lab, models.NodeStateChange) if isinstance(c, models.NodeStateChange)),
               default=0)


def deep_checks(lab: Lab, node: str, after: int) -> list[dict[str, object]]:
    """NODE's deep-check records written after row id AFTER, oldest first (by id: a SELECT without ORDER BY has no
    order in PostgreSQL, so a count of earlier rows is no window)."""
    subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True, check=False)
    rows = [c for c in ledger_rows(lab, models.NodeStateChange, action="deep_check")
            if isinstance(c, models.NodeStateChange) and c.node == node and c.id > after]
    return [dict(c.details, id=c.id, time=str(c.time)) for c in sorted(rows, key=lambda c: c.id)]


def test_xid79_keeps_the_node_out_until_a_reboot_then_confirmed(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                                 workdir: Path, resume_after: list[str]) -> None:
    resume_after.append("n2")
    before = last_id(lab)
    run_and_inject(lab, slurm, jobs, workdir, "xid79")
    wait_until("n2 drained by its epilog", lambda: slurm.nodes(["n2"])[0].drain)
    # the deep checks fail while the GPU is gone: the node stays out, whatever the time
    rows = wait_until("two failed deep checks", lambda: (
        lambda checks: checks if len([c for c in checks if c.get("verdict") == "fail"]) >= 2 else None)(
        (recover_once(), deep_checks(lab, "n2", before))[1]), timeout=60, every=2)
    assert all(r.get("verdict") == "fail" for r in rows), rows
    assert slurm.nodes(["n2"])[0].drain
    assert any("gpu" in (r.get("failed") or []) for r in rows)
    subprocess.run(["slurmtools", "lab", "inject", "n2", "reboot"], check=True, capture_output=True)
    wait_until("n2 back in service after the reboot", lambda: (recover_once() or True) and not slurm.nodes(
        ["n2"])[0].drain, timeout=90, every=2)
    subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True, check=False)
    ended = [x for x in ledger_rows(lab, models.Exclusion, node="n2") if isinstance(x, models.Exclusion)
             and x.end is not None and x.source == "epilog"]
    latest = max(ended, key=lambda x: x.end)
    assert latest.outcome == "confirmed", latest.outcome
    assert latest.details.get("boot_id")                       # the drain said which boot it happened in


def test_a_fault_only_a_reboot_clears_is_not_refuted_by_checks_before_it(
        lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str]) -> None:
    """XID 154 with 'Node Reboot Required': even a deep check that passes (the driver's recovery action read back
    as none here, as after a GPU reset) does not return the node before its boot id changes."""
    resume_after.append("n2")
    before = last_id(lab)
    run_and_inject(lab, slurm, jobs, workdir, "xid154")
    wait_until("n2 drained by its epilog", lambda: slurm.nodes(["n2"])[0].drain)
    lab.set_snapshot("n2", "healthy-8xh100")                   # the probes pass, in the same boot
    rows = wait_until("two deep checks", lambda: (lambda checks: checks if len(checks) >= 2 else None)(
        (recover_once(), deep_checks(lab, "n2", before))[1]), timeout=60, every=2)
    assert {r.get("verdict") for r in rows} == {"waiting"} and rows[0].get("waiting_for") == "reboot", rows
    assert slurm.nodes(["n2"])[0].drain
    subprocess.run(["slurmtools", "lab", "inject", "n2", "reboot"], check=True, capture_output=True)
    wait_until("n2 back in service after the reboot", lambda: (recover_once() or True) and not slurm.nodes(
        ["n2"])[0].drain, timeout=90, every=2)
