"""The lab's injected faults change what the node's probes see the way the real fault would (lab/hardware.py), and
only a reboot clears them: checked with the real checks on the replayed snapshot, as the lab's gates and
return-to-service deep checks read it."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from slurmtools.checks import system as sysmod
from slurmtools.lab import faults, hardware

from .test_checks import SNAPS, failing, make_cfg, run_snap


class Node:
    """The part of the lab a fault touches, for one node in TMP (no Slurm: no job processes)."""

    gpus = 4

    def __init__(self, tmp: Path) -> None:
        self.root = tmp
        self.lines: list[str] = []
        shutil.copyfile(SNAPS / "healthy-8xh100.json", self.snapshot("n1"))
        hardware.save(self.snapshot("n1"), hardware.with_boot_id(self.snap(), "boot-1"))

    def snapshot(self, node: str) -> Path:
        return self.root / f"{node}.json"

    def snap(self) -> dict[str, Any]:
        return json.loads(self.snapshot("n1").read_text())

    def job_pids_on(self, node: str) -> list[tuple[int, str]]:
        return []

    def append_kernel_line(self, node: str, message: str) -> str:
        self.lines.append(message)
        return message

    def kernel_log(self, node: str) -> Path:
        return self.root / "kern.log"

    def set_snapshot(self, node: str, name: str, *, reboot: bool = False) -> Path:
        snap = hardware.load(SNAPS / f"{name}.json")
        assert snap is not None
        boot = None if reboot else hardware.boot_id(hardware.load(self.snapshot(node)))
        hardware.save(self.snapshot(node), hardware.with_boot_id(snap, boot))
        return self.snapshot(node)


#: fault -> (failing check, words of its reason) after it, on the deep profile
AFTER = {
    "xid79": ("gpu", "7 GPUs visible to NVML, expected 8"),
    "xid48": ("gpu", "uncorrected ECC"),
    "xid95": ("gpu", "uncorrected ECC"),
    "xid63": ("gpu", "row remapping pending"),
    "xid64": ("gpu", "row remapping failed"),
    "xid74": ("nvlink", "17 of 18 NVLinks active"),
    "nvlink": ("nvlink", "17 of 18 NVLinks active"),
    "xid154": ("gpu", "node reboot"),
    "xid119": ("gpu", "GPU reset"),
    "ib-down": ("infiniband", "port DOWN"),
    "ib-flap": ("infiniband", "link went down 2 times"),
}


@pytest.mark.parametrize("fault", sorted(AFTER))
def test_a_fault_shows_in_the_probes_until_a_reboot(tmp_path: Path, fault: str) -> None:
    node, cfg = Node(tmp_path), make_cfg(tmp_path)
    snap0 = node.snap()
    assert failing(run_snap(cfg, snap0, "deep")) == []
    out = faults.FAULTS[fault](node, "n1")                     # type: ignore[arg-type]
    assert out["hardware"] is True
    check, words = AFTER[fault]
    found = failing(run_snap(cfg, node.snap(), "deep"))
    assert any(c == check and words in r for c, r in found), (fault, found)
    gpu_line = next((line for line in node.lines if "Xid" in line), None)
    if gpu_line is not None:                                    # the XID names a GPU the probes know
        assert str(out["pci"]) in gpu_line and out["pci"] in {hardware.pci_of(d) for d in hardware.devices(snap0)}
    assert hardware.boot_id(node.snap()) == "boot-1"           # the same boot: nothing cleared it
    faults.FAULTS["reboot"](node, "n1")                         # type: ignore[arg-type]
    after = node.snap()
    assert failing(run_snap(cfg, after, "deep")) == [] and hardware.boot_id(after) not in (None, "boot-1")


def test_the_deep_check_reports_the_boot_it_ran_in(tmp_path: Path) -> None:
    node, cfg = Node(tmp_path), make_cfg(tmp_path)
    report = run_snap(cfg, node.snap(), "deep")
    (host,) = [r for r in report.results if r.check == "host"]
    assert host.evidence["boot_id"] == "boot-1"
    assert sysmod.boot_id(sysmod.System.from_snapshot(node.snap(), "t")) == "boot-1"


def test_faults_that_leave_the_hardware_alone(tmp_path: Path) -> None:
    node = Node(tmp_path)
    before = node.snap()
    for fault in ("xid13", "xid31", "xid43", "oom", "nfs-hang"):
        out = faults.FAULTS[fault](node, "n1")                  # type: ignore[arg-type]
        assert "hardware" not in out or out["hardware"] is False
    assert node.snap() == before


class _Forking(Node):
    """A node whose job script forks a child right after the kill's scan of /proc (CI's race: the script's `sleep`
    started between the scan and the kill, survived, and kept the job running for minutes). The fault scans once to
    name the job's pid in its kernel line, then the kill scans: the child appears just after that second scan."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.script = subprocess.Popen(["sleep", "300"])
        self.child: subprocess.Popen[bytes] | None = None
        self.scans = 0

    def job_pids_on(self, node: str) -> list[tuple[int, str]]:
        self.scans += 1
        procs = [self.script] + ([self.child] if self.child else [])
        found = [(p.pid, "42") for p in procs if p.poll() is None]
        if self.child is None and self.scans == 2:
            self.child = subprocess.Popen(["sleep", "300"])   # forked just after this scan
        return found


def test_a_lost_gpu_kills_a_child_forked_between_the_scan_and_the_kill(tmp_path: Path) -> None:
    node = _Forking(tmp_path)
    try:
        out = faults.FAULTS["xid79"](node, "n1")                    # type: ignore[arg-type]
        assert node.child is not None
        assert node.script.wait(timeout=5) == -signal.SIGKILL
        assert node.child.wait(timeout=5) == -signal.SIGKILL
        assert sorted(out["killed_pids"]) == sorted([node.script.pid, node.child.pid])  # type: ignore[arg-type]
    finally:
        for p in (node.script, node.child):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
