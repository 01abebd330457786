"""Faults the lab injects on a node: kernel-log lines as a real driver prints them (XID, NVLink, IB, OOM, NFS),
with the job's processes killed as the fault would, or a health snapshot the prolog's checks replay.
`slurmtools lab inject NODE FAULT` (and `Lab.inject`) pick one from `FAULTS`."""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from slurmtools.lab import hardware
from slurmtools.lab.procs import LabError


class Target(Protocol):
    """What a fault needs of the lab (`slurmtools.lab.cluster.Lab`)."""

    gpus: int
    root: Path

    def job_pids_on(self, node: str) -> Iterator[tuple[int, str]]: ...
    def snapshot(self, node: str) -> Path: ...
    def append_kernel_line(self, node: str, message: str) -> str: ...
    def kernel_log(self, node: str) -> Path: ...
    def set_snapshot(self, node: str, name: str, *, reboot: bool = False) -> Path: ...


def _kill_jobs_on(lab: Target, node: str, only_one: bool = False) -> tuple[list[str], list[int]]:
    """SIGKILL the processes of the jobs running on a lab node (all of them, or the biggest one).

    All of them: each process found is stopped first and the node scanned again until a scan finds no new one, so a
    child forked between the scan and the kill (a job script starting its `sleep`) dies too; a lost GPU leaves no
    survivor (a survivor kept CI's job running for minutes after its fault)."""
    found = list(lab.job_pids_on(node))
    jobs = sorted({job for _, job in found})
    if only_one:
        targets = [max(found, key=lambda pj: _rss(pj[0]))[0]] if found else []
    else:
        targets = _stop_all(lab, node, found)
    killed = []
    for pid in targets:
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except ProcessLookupError:
            pass
    return jobs, killed


def _stop_all(lab: Target, node: str, found: list[tuple[int, str]], rounds: int = 50) -> list[int]:
    """SIGSTOP the processes found, rescanning until no new one appears (a stopped process forks no more)."""
    stopped: list[int] = []
    for _ in range(rounds):
        new = [pid for pid, _ in found if pid not in stopped]
        if not new:
            break
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            stopped.append(pid)
        found = list(lab.job_pids_on(node))
    return stopped


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _kernel_fault(lines: list[str], kill: str | None) -> Callable[[Target, str], dict[str, object]]:
    """A fault: kernel lines appended to the node's log ({pci}, {pid} filled in), then maybe a kill
    ("all": every job process on the node, as a lost GPU would; "one": the biggest, as the OOM killer)."""

    def inject(lab: Target, node: str) -> dict[str, object]:
        # a GPU the node's probes see (its snapshot), so the kernel line and the hardware agree
        gpus = hardware.devices(hardware.load(lab.snapshot(node)))
        pci = (hardware.pci_of(gpus[secrets.randbelow(len(gpus))]) if gpus
               else f"0000:{0x18 + 0x10 * secrets.randbelow(lab.gpus):02x}:00")
        found = list(lab.job_pids_on(node))
        pid = found[0][0] if found else 4242
        written = [lab.append_kernel_line(node, text.format(pci=pci, pid=pid)) for text in lines]
        jobs, killed = _kill_jobs_on(lab, node, only_one=kill == "one") if kill else (
            sorted({job for _, job in found}), [])
        return {"node": node, "kernel_log": str(lab.kernel_log(node)), "line": written[-1], "lines": written,
                "jobs": jobs, "killed_pids": killed, "pci": pci}

    return inject


FAULTS: dict[str, Callable[[Target, str], dict[str, object]]] = {
    "xid79": _kernel_fault(["NVRM: Xid (PCI:{pci}): 79, pid={pid}, name=python3, GPU has fallen off the bus."],
                           "all"),
    "xid13": _kernel_fault(["NVRM: Xid (PCI:{pci}): 13, pid={pid}, name=python3, Graphics Exception: "
                            "ESR 0x404490=0x80000002"], "all"),
    "xid48": _kernel_fault(["NVRM: Xid (PCI:{pci}): 48, pid={pid}, name=python3, An uncorrectable double bit "
                            "error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."],
                           "all"),
    "xid94": _kernel_fault(["NVRM: Xid (PCI:{pci}): 94, pid={pid}, name=python3, Contained: SM (0x1). "
                            "RST: No, D-RST: No"], "all"),
    "nvlink": _kernel_fault(["NVRM: NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
                             "NVRM: Xid (PCI:{pci}): 74, pid={pid}, name=python3, NVLink: fatal error detected on "
                             "link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)"], "all"),
    "ib-down": _kernel_fault(["mlx5_core 0000:17:00.0 ibp23s0: Link down"], None),
    "oom": _kernel_fault(["python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
                          "Memory cgroup out of memory: Killed process {pid} (python3) total-vm:73400320kB, "
                          "anon-rss:65011712kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:128000kB "
                          "oom_score_adj:0"], "one"),
    "nfs-hang": _kernel_fault(["nfs: server nfs01 not responding, still trying"], None),
    "nfs-ok": _kernel_fault(["nfs: server nfs01 OK"], None),
    "ib-flap": _kernel_fault(["mlx5_core 0000:17:00.0 ibp23s0: Link down", "mlx5_core 0000:17:00.0 ibp23s0: Link up",
                              "mlx5_core 0000:17:00.0 ibp23s0: Link down", "mlx5_core 0000:17:00.0 ibp23s0: Link up"],
                             None),
}
# More XIDs, in the forms real drivers print them (tests/data/kernel holds the sources): the job's processes die
# with the GPU's work ("all"), except XID 63, a remapping the running job survives.
_XIDS = {
    31: ("{pid}, name=python3, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ "
         "0x7f1c_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ", "all"),
    43: ("{pid}, name=python3, Ch 00000008", "all"),
    45: ("{pid}, name=python3, Ch 00000008", "all"),
    63: ("{pid}, name=python3, Row Remapper: New row (0x00000000000a1b2c) Marked for Remapping, reset gpu to "
         "activate.", None),
    64: ("{pid}, name=python3, Row Remapper Error: (0x00000000000a1b2c) - All reserved rows for bank are remapped",
         "all"),
    74: ("{pid}, name=python3, NVLink: fatal error detected on link 14(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)", "all"),
    95: ("{pid}, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No", "all"),
    119: ("{pid}, name=python3, Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 "
          "(GSP_RM_CONTROL) (0x20803 0x4)", "all"),
}
for _x, (_text, _kill) in _XIDS.items():
    FAULTS[f"xid{_x}"] = _kernel_fault([f"NVRM: Xid (PCI:{{pci}}): {_x}, pid={_text}"], _kill)
FAULTS["xid154"] = _kernel_fault(["NVRM: Xid (PCI:{pci}): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
                                  "(Node Reboot Required)"], "all")


def _with_hardware(name: str, inject: Callable[[Target, str], dict[str, object]]
                   ) -> Callable[[Target, str], dict[str, object]]:
    """The fault's kernel lines, then the node's hardware as the fault leaves it (lab/hardware.py)."""

    def both(lab: Target, node: str) -> dict[str, object]:
        out = inject(lab, node)
        lines = out["lines"]
        assert isinstance(lines, list)
        out["hardware"] = hardware.apply(lab.snapshot(node), name, str(out["pci"]), [str(x) for x in lines])
        return out

    return both


for _name in hardware.EFFECTS:
    FAULTS[_name] = _with_hardware(_name, FAULTS[_name])


def _snapshot_fault(name: str) -> Callable[[Target, str], dict[str, object]]:
    """A fault the prolog's health checks see: the node's replayed snapshot becomes NAME."""

    def inject(lab: Target, node: str) -> dict[str, object]:
        return {"node": node, "snapshot": str(lab.set_snapshot(node, name)), "state": name}

    return inject


#: Snapshot states a lab node can be switched to (`lab inject n3 row-remap-failure`; `healthy` restores).
SNAPSHOT_FAULTS = ("gpu-missing", "row-remap-failure", "ecc-dbe", "nvlink-down", "ib-port-down", "ib-link-downed",
                   "thermal-slowdown", "pcie-downtrained")
FAULTS.update({name: _snapshot_fault(name) for name in SNAPSHOT_FAULTS})
FAULTS["healthy"] = _snapshot_fault("healthy-8xh100")


def _reboot(lab: Target, node: str) -> dict[str, object]:
    """The node rebooted (an admin's repair): a new boot id, its hardware healthy again."""
    path = lab.set_snapshot(node, "healthy-8xh100", reboot=True)
    return {"node": node, "snapshot": str(path), "state": "rebooted", "boot_id": hardware.boot_id(hardware.load(path))}


FAULTS["reboot"] = _reboot


def faketime_lib() -> str:
    """Debian's libfaketime (package libfaketime), whatever the architecture's library directory."""
    import glob

    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    return found[0] if found else "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def _clock(offset: str | None) -> Callable[[Target, str], dict[str, object]]:
    """The node's hooks run with their wall clock OFFSET (libfaketime's relative form, "+8s"); None: true again."""

    def inject(lab: Target, node: str) -> dict[str, object]:
        path = lab.root / "faults" / f"{node}.clock"
        if offset is None:
            path.unlink(missing_ok=True)
            return {"node": node, "clock": "true"}
        if not Path(faketime_lib()).exists():
            raise LabError(f"{faketime_lib()} is missing: install Debian's libfaketime (`slurmtools lab up`)")
        path.write_text(offset + "\n")
        return {"node": node, "clock": offset}

    return inject


#: A node whose clock drifted (its NTP failed): its hooks' wall clock off by a few seconds.
FAULTS.update({"clock-ahead": _clock("+8s"), "clock-behind": _clock("-8s"), "clock-ok": _clock(None)})



def _gpu(mode: str | None) -> Callable[[Target, str], dict[str, object]]:
    """What the node's fake GPUs report to the stall detector's sampler (`stalls.gpu_replay`): spinning (full
    utilisation at low power, a rank waiting in a collective), idle, busy (real work); None: no signal at all."""

    def inject(lab: Target, node: str) -> dict[str, object]:
        path = lab.root / "faults" / f"{node}.gpu.json"
        if mode is None:
            path.unlink(missing_ok=True)
            return {"node": node, "gpu": "clear", "file": str(path)}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f'{{"mode": "{mode}", "gpus": {lab.gpus}}}\n')
        tmp.replace(path)
        return {"node": node, "gpu": mode, "file": str(path)}

    return inject


#: The stall detector's GPU signal on a lab node (`slurmtools lab inject n2 gpu-idle`).
FAULTS.update({"gpu-spin": _gpu("spin"), "gpu-idle": _gpu("idle"), "gpu-busy": _gpu("busy"), "gpu-clear": _gpu(None)})
