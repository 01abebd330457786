"""Build the shipped snapshots: a healthy 8x H100 SXM node (DGX H100 layout) and its faulted variants.

These are synthetic: written from NVIDIA's and the kernel's documented formats (NVML return values,
/sys/class/infiniband port files, /proc files), not recorded on a real node; a real recording is made
with `slurmtools snapshot record FILE` on a GPU node. Run this file to rewrite them; a test fails if the
files and this script disagree.

    python tests/data/snapshots/make_snapshots.py
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
NVSWITCH_BUS = ["05", "06", "07", "08"]
NVLINKS = 18


def healthy() -> dict[str, Any]:
    devices = []
    for i, bus in enumerate(BUS):
        devices.append({
            "index": i, "minor_number": i, "name": "NVIDIA H100 80GB HBM3",
            "uuid": f"GPU-5e1f0c2a-8b3d-4c6e-9f10-{i:012d}", "pci_bus_id": f"00000000:{bus.upper()}:00.0",
            "ecc_uncorrected_volatile": 0, "retired_pages_pending": None, "remapped_rows": [0, 0, 0, 0],
            "temperature": 33 + i % 3, "clocks_event_reasons": 1, "persistence_mode": 1, "mig_mode": [0, 0],
            "memory_used_mib": 0, "processes": [], "recovery_action": 0,
            "nvlink_state": [1] * NVLINKS, "nvlink_counters": [[0, 0, 0] for _ in range(NVLINKS)],
            # idle: NVML's clock event reason 0x1 (GPU idle), link trained down to Gen1 to save power
            "pcie_gen": 1, "pcie_width": 16, "pcie_max_gen": 5, "pcie_max_width": 16, "pcie_gpu_max_gen": 5,
            "clock_sm_mhz": 345, "clock_sm_max_mhz": 1980, "power_mw": 71000 + 1000 * i,
        })
    files: dict[str, str] = {}
    for bus in BUS:
        files[f"sys/bus/pci/devices/0000:{bus}:00.0/vendor"] = "0x10de\n"
        files[f"sys/bus/pci/devices/0000:{bus}:00.0/class"] = "0x030200\n"
    for bus in NVSWITCH_BUS:
        files[f"sys/bus/pci/devices/0000:{bus}:00.0/vendor"] = "0x10de\n"
        files[f"sys/bus/pci/devices/0000:{bus}:00.0/class"] = "0x068000\n"
    for n in range(8):
        files.update(port(f"mlx5_{n}", "InfiniBand", "400 Gb/sec (4X NDR)"))
    files.update(port("mlx5_8", "Ethernet", "200 Gb/sec (4X HDR)"))
    for n in range(9):      # ConnectX-7 (Gen5 x16) for InfiniBand, a ConnectX-6 (Gen4 x16) for RoCE
        files.update(nic_link(f"mlx5_{n}", "32.0 GT/s PCIe" if n < 8 else "16.0 GT/s PCIe", "16"))
    files["sys/class/infiniband/mlx5_8/device/net/eth0/operstate"] = "up\n"
    files["sys/class/infiniband/mlx5_8/device/net/eth0/carrier"] = "1\n"
    files["proc/meminfo"] = ("MemTotal:       2113481216 kB\nMemFree:        1987654320 kB\n"
                             "MemAvailable:   2001234560 kB\n")
    files["proc/mounts"] = ("/dev/md0 / ext4 rw,relatime 0 0\n/dev/md1 /raid ext4 rw,relatime 0 0\n"
                            "nfs1:/home /home nfs4 rw,relatime,vers=4.2 0 0\n")
    return {"format": "slurmtools-snapshot/1", "host": "dgx-h100-synthetic", "recorded_at": "2026-11-01T00:00:00Z",
            "note": "synthetic: see tests/data/snapshots/make_snapshots.py",
            "nvml": {"driver_version": "550.90.07", "cuda_driver_version": 12040, "devices": devices},
            "files": files}


def port(dev: str, layer: str, rate: str, state: str = "4: ACTIVE", phys: str = "5: LinkUp") -> dict[str, str]:
    base = f"sys/class/infiniband/{dev}/ports/1"
    out = {f"{base}/state": state + "\n", f"{base}/phys_state": phys + "\n", f"{base}/rate": rate + "\n",
           f"{base}/link_layer": layer + "\n"}
    for counter in ("link_downed", "symbol_error", "link_error_recovery", "port_rcv_errors"):
        out[f"{base}/counters/{counter}"] = "0\n"
    return out


def nic_link(dev: str, speed: str, width: str, max_speed: str = "", max_width: str = "") -> dict[str, str]:
    base = f"sys/class/infiniband/{dev}/device"
    return {f"{base}/current_link_speed": speed + "\n", f"{base}/current_link_width": width + "\n",
            f"{base}/max_link_speed": (max_speed or speed) + "\n",
            f"{base}/max_link_width": (max_width or width) + "\n"}


def variants() -> dict[str, dict[str, Any]]:
    base = healthy()
    out = {"healthy-8xh100": base}

    def variant(name: str, note: str) -> dict[str, Any]:
        snap = copy.deepcopy(base)
        snap["note"] = f"synthetic fault: {note}"
        out[name] = snap
        return snap

    snap = variant("gpu-missing", "GPU 5 (0000:ab:00.0) fell off the bus: on PCI, not in NVML")
    del snap["nvml"]["devices"][5]
    snap = variant("row-remap-failure", "GPU 3 row remapping failed (uncorrectable rows, no spare)")
    snap["nvml"]["devices"][3]["remapped_rows"] = [0, 12, 0, 1]
    snap = variant("ecc-dbe", "GPU 6 double-bit ECC errors, row remap pending")
    snap["nvml"]["devices"][6]["ecc_uncorrected_volatile"] = 2
    snap["nvml"]["devices"][6]["remapped_rows"] = [0, 1, 1, 0]
    snap = variant("nvlink-down", "GPU 2 NVLinks 4 and 5 inactive")
    snap["nvml"]["devices"][2]["nvlink_state"][4] = 0
    snap["nvml"]["devices"][2]["nvlink_state"][5] = 0
    snap = variant("ib-port-down", "mlx5_4 port 1 down (polling)")
    snap["files"].update(port("mlx5_4", "InfiniBand", "10 Gb/sec (4X SDR)", "1: DOWN", "2: Polling"))
    snap = variant("ib-link-downed", "mlx5_2 port 1 went down 3 times in the last 5 minutes (active again)")
    snap["files"]["sys/class/infiniband/mlx5_2/ports/1/counters/link_downed"] = "3\n"
    snap["previous"] = {"age_s": 300, "counters": {"ib/mlx5_2/1/link_downed": 0}}
    snap = variant("thermal-slowdown", "GPU 1 HW thermal slowdown at 91 C")
    snap["nvml"]["devices"][1]["clocks_event_reasons"] = 0x48
    snap["nvml"]["devices"][1]["temperature"] = 91
    snap = variant("pcie-downtrained", "GPU 4 trained at PCIe x8 (of x16); mlx5_3 at Gen4 (of Gen5)")
    snap["nvml"]["devices"][4]["pcie_width"] = 8
    snap["files"].update(nic_link("mlx5_3", "16.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16"))
    return out


def render(snap: dict[str, Any]) -> str:
    return json.dumps(snap, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    for name, snap in variants().items():
        (HERE / f"{name}.json").write_text(render(snap))
    sys.exit(0)
